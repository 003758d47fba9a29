"""Pure-Python client for zerolayer's shared-memory transport.

    import zerolayer_client as zl
    with zl.connect("/zerolayer-8000") as client:  # serve --port 8000
        for ev in client.stream(prompt="Hello", max_new_tokens=16, temperature=0):
            print(ev.text, end="")
        result = client.generate(prompt=[1, 2, 3], max_new_tokens=8)

The layout is zerolayer/shm_protocol.h (the specification); this module
mirrors its constants and offsets and checks the header's sizes against them.
No compiled extension and no third-party package: the segment is mmap'ed
from /dev/shm, records are packed with `struct`, and the few words that need
atomic operations (slot claims, ring sequence numbers, positions) go through
libatomic's __atomic_* entry points via ctypes, since Python has no atomics.

Waiting: spin briefly, then sleep on the response futex through libc's
syscall(SYS_futex) via ctypes, with a 100 ms timeout so that server death
(pid gone, heartbeat older than 1 s, or a stopped segment) is noticed and
raised as ServerDeadError within about 1 s. A daemon thread refreshes this
client's heartbeat every 50 ms. One Client is for one thread at a time.
"""

import ctypes
import ctypes.util
import errno
import json
import mmap
import os
import platform
import struct
import threading
import time
from collections import deque, namedtuple

MAGIC = 0x31304D4853534C5A
VERSION = 3
HEADER_BYTES = 4096
CLIENT_BYTES = 256
REQUEST_SLOT_BYTES = 16384
RESPONSE_SLOT_BYTES = 512
REQUEST_FIXED_BYTES = 256
REQUEST_PAYLOAD_BYTES = REQUEST_SLOT_BYTES - 8 - REQUEST_FIXED_BYTES
RESPONSE_TEXT_BYTES = RESPONSE_SLOT_BYTES - 8 - 256
MAX_STOP = 16
MAX_STOP_TOKEN_IDS = 64
MAX_LOGIT_BIAS = 1024
DEAD_AFTER_NS = 1_000_000_000

SERVER_STOPPED = 2
CLIENT_FREE, CLIENT_CLAIMING, CLIENT_ACTIVE, CLIENT_CLOSING = 0, 1, 2, 3
REQUEST_SUBMIT, REQUEST_CANCEL, REQUEST_PROMPT_PART = 1, 2, 3
PROMPT_TOKENS, PROMPT_TEXT, PROMPT_CHAT = 1, 2, 3
CHAT_ROLES = {"system": 0, "user": 1, "assistant": 2, "tool": 3}
RESPONSE_TOKEN, RESPONSE_TEXT, RESPONSE_FINISH, RESPONSE_ERROR = 1, 2, 3, 4
FINISH_REASONS = ("stop", "length", "aborted", "error")

# zl_shm_header fields used here: (offset, struct format)
_HEADER = struct.Struct("<QII Q QII QII QQII iI Q Q ii I")
_H_ENQUEUE, _H_DEQUEUE, _H_FUTEX, _H_SLEEPING = 256, 320, 384, 388
_H_STATE, _H_HEARTBEAT = 84, 88
# zl_shm_client offsets
_C_STATE, _C_PID, _C_HEARTBEAT, _C_GENERATION, _C_PENDING = 0, 4, 8, 16, 24
_C_DEQUEUE, _C_FUTEX, _C_SLEEPING = 64, 128, 132
# zl_shm_request fixed part up to num_logit_bias (224 bytes), after the 8-byte sequence
_REQUEST = struct.Struct("<IIQQQII" "fifffffIQiI" "iifII I16I II16s I I II II")
STRUCTURED_KINDS = {"json_object": 1, "json_schema": 2, "regex": 3, "choice": 4, "grammar": 5, "structural_tag": 6}
# zl_shm_response up to top[] (96 bytes), after the 8-byte sequence
_RESPONSE = struct.Struct("<IIQQifIIiiiiddddII")

_SYS_FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine(), 202)
_FUTEX_WAIT, _FUTEX_WAKE = 0, 1
_SEQ_CST = 5

_libc = ctypes.CDLL(None, use_errno=True)
_libatomic = ctypes.CDLL(ctypes.util.find_library("atomic") or "libatomic.so.1")
_cas8 = _libatomic.__atomic_compare_exchange_8
_cas8.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int, ctypes.c_int]
_cas8.restype = ctypes.c_bool
_cas4 = _libatomic.__atomic_compare_exchange_4
_cas4.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_int]
_cas4.restype = ctypes.c_bool
_load8 = _libatomic.__atomic_load_8
_load8.argtypes = [ctypes.c_void_p, ctypes.c_int]
_load8.restype = ctypes.c_uint64
_store8 = _libatomic.__atomic_store_8
_store8.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int]
_load4 = _libatomic.__atomic_load_4
_load4.argtypes = [ctypes.c_void_p, ctypes.c_int]
_load4.restype = ctypes.c_uint32
_store4 = _libatomic.__atomic_store_4
_store4.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int]
_add4 = _libatomic.__atomic_fetch_add_4
_add4.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int]
_add4.restype = ctypes.c_uint32
_xchg4 = _libatomic.__atomic_exchange_4
_xchg4.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int]
_xchg4.restype = ctypes.c_uint32


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class ZerolayerError(RuntimeError):
    """Base class of this module's errors."""


class ServerDeadError(ZerolayerError):
    """The server stopped, died, or took this client for dead."""


class RequestError(ZerolayerError):
    """The server rejected a request (an ERROR record); the message names the field."""


Event = namedtuple("Event", "kind request_id token text logprob top_logprobs finish_reason detail "
                            "num_prompt_tokens num_generated_tokens timings sink_ns read_ns")
Result = namedtuple("Result", "tokens text finish_reason detail num_prompt_tokens num_generated_tokens timings")


def _now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class Client:
    def __init__(self, name):
        path = "/dev/shm/" + name.lstrip("/")
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            raise ZerolayerError(f"no shared-memory segment {name}") from None
        try:
            size = os.fstat(fd).st_size
            if size < HEADER_BYTES:
                raise ZerolayerError(f"{name} is too small to be a zerolayer segment")
            self._mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self._buf = (ctypes.c_char * size).from_buffer(self._mm)
        self._base = ctypes.addressof(self._buf)
        self._read_header(name, size)
        self._check_server()
        self._claim_slot()
        self._next_id = 1
        self._pending = {}  # request id -> deque of events read while waiting for another id
        self._stop = threading.Event()
        self._heartbeat = threading.Thread(target=self._beat, daemon=True)
        self._heartbeat.start()

    # -- setup ---------------------------------------------------------
    def _read_header(self, name, size):
        (magic, version, header_bytes, total, self._clients_off, self._num_clients, client_bytes,
         self._req_off, self._req_slots, req_slot_bytes, self._resp_off, self._resp_ring_bytes,
         self._resp_slots, resp_slot_bytes, self._server_pid, _state, _beat, _start,
         self.vocab_size, self.max_seq_len, _inflight) = _HEADER.unpack_from(self._mm, 0)
        if magic != MAGIC or version != VERSION:
            raise ZerolayerError(f"{name} is not a zerolayer v{VERSION} segment")
        if (header_bytes, client_bytes, req_slot_bytes, resp_slot_bytes) != (
                HEADER_BYTES, CLIENT_BYTES, REQUEST_SLOT_BYTES, RESPONSE_SLOT_BYTES):
            raise ZerolayerError(f"{name}: record sizes differ from this client's protocol")
        for slots in (self._req_slots, self._resp_slots):
            if slots == 0 or slots & (slots - 1):
                raise ZerolayerError(f"{name}: ring sizes are not powers of two")
        ends = (self._clients_off + self._num_clients * CLIENT_BYTES,
                self._req_off + self._req_slots * REQUEST_SLOT_BYTES,
                self._resp_off + self._num_clients * self._resp_ring_bytes)
        if total > size or max(ends) > total:
            raise ZerolayerError(f"{name}: a region lies outside the segment")

    def _claim_slot(self):
        for slot in range(self._num_clients):
            addr = self._client_addr(slot)
            expected = ctypes.c_uint32(CLIENT_FREE)
            if _cas4(addr + _C_STATE, ctypes.byref(expected), CLIENT_CLAIMING, _SEQ_CST, _SEQ_CST):
                struct.pack_into("<i", self._mm, addr - self._base + _C_PID, os.getpid())
                _store8(addr + _C_HEARTBEAT, _now_ns(), _SEQ_CST)
                self.slot = slot
                self._generation = _load8(addr + _C_GENERATION, _SEQ_CST)
                self._dequeue = _load8(addr + _C_DEQUEUE, _SEQ_CST)
                _store4(addr + _C_STATE, CLIENT_ACTIVE, _SEQ_CST)
                return
        raise ZerolayerError(f"all {self._num_clients} client slots are taken")

    def _beat(self):
        addr = self._client_addr(self.slot) + _C_HEARTBEAT
        while not self._stop.wait(0.05):
            _store8(addr, _now_ns(), _SEQ_CST)

    def _client_addr(self, slot):
        return self._base + self._clients_off + slot * CLIENT_BYTES

    def _request_slot_addr(self, pos):
        return self._base + self._req_off + (pos & (self._req_slots - 1)) * REQUEST_SLOT_BYTES

    def _response_slot_addr(self, pos):
        return (self._base + self._resp_off + self.slot * self._resp_ring_bytes
                + (pos & (self._resp_slots - 1)) * RESPONSE_SLOT_BYTES)

    # -- liveness ------------------------------------------------------
    def _check_server(self):
        if _load4(self._base + _H_STATE, _SEQ_CST) == SERVER_STOPPED:
            raise ServerDeadError("the server stopped")
        try:
            os.kill(self._server_pid, 0)
        except ProcessLookupError:
            raise ServerDeadError(f"the server process {self._server_pid} is gone") from None
        except PermissionError:
            pass
        if _now_ns() - _load8(self._base + _H_HEARTBEAT, _SEQ_CST) > DEAD_AFTER_NS:
            raise ServerDeadError("the server's heartbeat is over 1 s old")
        if hasattr(self, "slot"):
            addr = self._client_addr(self.slot)
            if (_load4(addr + _C_STATE, _SEQ_CST) != CLIENT_ACTIVE
                    or _load8(addr + _C_GENERATION, _SEQ_CST) != self._generation):
                raise ServerDeadError("the server reclaimed this client's slot (took it for dead)")

    # -- requests ------------------------------------------------------
    def _push(self, fixed, payload=b""):
        """Claims a request position, writes the record, publishes it, wakes the server."""
        enqueue = self._base + _H_ENQUEUE
        pending = self._client_addr(self.slot) + _C_PENDING
        deadline = time.monotonic() + 5.0
        while True:
            pos = _load8(enqueue, _SEQ_CST)
            seq_addr = self._request_slot_addr(pos)
            diff = (_load8(seq_addr, _SEQ_CST) - pos + (1 << 63)) % (1 << 64) - (1 << 63)
            if diff == 0:
                _store8(pending, pos + 1, _SEQ_CST)
                expected = ctypes.c_uint64(pos)
                if _cas8(enqueue, ctypes.byref(expected), pos + 1, _SEQ_CST, _SEQ_CST):
                    break
            elif diff < 0:
                _store8(pending, 0, _SEQ_CST)
                self._check_server()
                if time.monotonic() > deadline:
                    raise ZerolayerError("the request ring stayed full for 5 s")
                time.sleep(0.0001)
        off = seq_addr - self._base + 8
        self._mm[off:off + len(fixed)] = fixed
        self._mm[off + REQUEST_FIXED_BYTES:off + REQUEST_FIXED_BYTES + len(payload)] = payload
        expected = ctypes.c_uint64(pos)
        published = _cas8(seq_addr, ctypes.byref(expected), pos + 1, _SEQ_CST, _SEQ_CST)
        _store8(pending, 0, _SEQ_CST)
        if not published:
            raise ServerDeadError("the server skipped this request (it took this client for dead)")
        # Whoever takes server_sleeping from 1 to 0 makes this sleep's one wake-up syscall.
        if _load4(self._base + _H_SLEEPING, _SEQ_CST) and _xchg4(self._base + _H_SLEEPING, 0, _SEQ_CST):
            _add4(self._base + _H_FUTEX, 1, _SEQ_CST)
            _libc.syscall(_SYS_FUTEX, ctypes.c_void_p(self._base + _H_FUTEX), _FUTEX_WAKE, 0x7FFFFFFF, None, None, 0)

    def submit(self, prompt, max_new_tokens=256, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0,
               repetition_penalty=1.0, presence_penalty=0.0, frequency_penalty=0.0, seed=None,
               num_top_logprobs=0, stop=(), stop_token_ids=(), ignore_eos=False, cache_salt="",
               priority=0, min_token_prob=0.0, signature=None, structured=None, logit_bias=None,
               keep_special_tokens=False):
        """Writes one SUBMIT record; returns its request id. Events follow via next_event().

        prompt: text, a list of token ids, or chat messages ([{"role": ..., "content": ...}],
        rendered by the server through the model's chat template).
        structured: (kind, spec) constraining the output, kind one of STRUCTURED_KINDS
        (spec: a JSON schema, regex, EBNF grammar or structural tag as text; for "choice"
        a list of strings; for "json_object" None).
        logit_bias: {token id: bias in [-100, 100]}, OpenAI's. keep_special_tokens: special
        tokens are text too (vLLM's skip_special_tokens false)."""
        if isinstance(prompt, (list, tuple)) and prompt and isinstance(prompt[0], dict):
            kind, body = PROMPT_CHAT, _encode_chat(prompt)
            count = len(body)
        elif isinstance(prompt, str):
            kind, body = PROMPT_TEXT, prompt.encode("utf-8")
            count = len(body)
        else:
            ids = list(prompt)
            kind, body, count = PROMPT_TOKENS, struct.pack(f"<{len(ids)}i", *ids), len(ids)
        stops = [s.encode("utf-8") for s in stop]
        if len(stops) > MAX_STOP or len(stop_token_ids) > MAX_STOP_TOKEN_IDS:
            raise ValueError(f"at most {MAX_STOP} stop strings and {MAX_STOP_TOKEN_IDS} stop token ids")
        salt = cache_salt.encode("utf-8")
        structured_kind, spec = 0, b""
        if structured is not None:
            structured_kind = STRUCTURED_KINDS[structured[0]]
            value = structured[1]
            spec = b"" if value is None else (json.dumps(value) if structured[0] == "choice" else value).encode("utf-8")
        bias = sorted((logit_bias or {}).items())
        if len(bias) > MAX_LOGIT_BIAS:
            raise ValueError(f"at most {MAX_LOGIT_BIAS} logit_bias entries")
        packed_bias = b"".join(struct.pack("<if", int(i), float(b)) for i, b in bias)
        rest = struct.pack(f"<{len(stop_token_ids)}i", *stop_token_ids) + b"".join(stops) + salt + spec + packed_bias
        if len(rest) >= REQUEST_PAYLOAD_BYTES:
            raise ValueError(f"stop ids, stops and salt take {len(rest)} bytes; a record holds {REQUEST_PAYLOAD_BYTES}")
        # What of the prompt does not fit beside the rest goes ahead in PROMPT_PART records.
        in_parts = max(0, len(body) - (REQUEST_PAYLOAD_BYTES - len(rest)))
        payload = body[in_parts:] + rest
        if signature is not None and len(signature) != 16:
            raise ValueError("signature must be 16 bytes")
        request_id = self._next_id
        self._next_id += 1
        stop_bytes = [len(s) for s in stops] + [0] * (MAX_STOP - len(stops))
        fixed = _REQUEST.pack(
            REQUEST_SUBMIT, self.slot, request_id, self._generation, _now_ns(), kind, count,
            temperature, top_k, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty,
            0 if seed is None else 1, seed or 0, num_top_logprobs, 0,
            max_new_tokens, priority, min_token_prob, 1 if ignore_eos else 0, len(stops), len(stop_token_ids),
            *stop_bytes, len(salt), 0 if signature is None else 1, bytes(signature or b"\0" * 16), len(payload),
            in_parts, structured_kind, len(spec), 1 if keep_special_tokens else 0, len(bias))
        for at in range(0, in_parts, REQUEST_PAYLOAD_BYTES):
            part = body[at:min(at + REQUEST_PAYLOAD_BYTES, in_parts)]
            self._push(_REQUEST.pack(REQUEST_PROMPT_PART, self.slot, request_id, self._generation, 0, kind, 0,
                                     *([0.0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0, 0]), 0, 0, 0.0, 0, 0, 0,
                                     *([0] * MAX_STOP), 0, 0, b"\0" * 16, len(part), 0, 0, 0, 0, 0), part)
        self._push(fixed, payload)
        self._pending[request_id] = deque()
        return request_id

    def cancel(self, request_id):
        fixed = _REQUEST.pack(REQUEST_CANCEL, self.slot, request_id, self._generation, _now_ns(), 0, 0,
                              *([0.0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0, 0]), 0, 0, 0.0, 0, 0, 0,
                              *([0] * MAX_STOP), 0, 0, b"\0" * 16, 0, 0, 0, 0, 0, 0)
        self._push(fixed)

    # -- responses -----------------------------------------------------
    def next_event(self, timeout=None):
        """The next event of any request; raises ServerDeadError, or TimeoutError after `timeout` s."""
        deadline = None if timeout is None else _now_ns() + int(timeout * 1e9)
        me = self._client_addr(self.slot)
        spins = 0
        while True:
            addr = self._response_slot_addr(self._dequeue)
            if _load8(addr, _SEQ_CST) == self._dequeue + 1:
                event = self._decode(addr - self._base + 8)
                _store8(addr, self._dequeue + self._resp_slots, _SEQ_CST)
                self._dequeue += 1
                _store8(me + _C_DEQUEUE, self._dequeue, _SEQ_CST)
                return event
            spins += 1
            if spins < 200:
                continue
            self._check_server()
            now = _now_ns()
            if deadline is not None and now >= deadline:
                raise TimeoutError("no event within the timeout")
            seen = _load4(me + _C_FUTEX, _SEQ_CST)
            _store4(me + _C_SLEEPING, 1, _SEQ_CST)
            if _load8(addr, _SEQ_CST) != self._dequeue + 1:
                wait_ns = 100_000_000 if deadline is None else min(100_000_000, deadline - now)
                ts = _Timespec(wait_ns // 1_000_000_000, wait_ns % 1_000_000_000)
                _libc.syscall(_SYS_FUTEX, ctypes.c_void_p(me + _C_FUTEX), _FUTEX_WAIT, seen, ctypes.byref(ts), None, 0)
            _store4(me + _C_SLEEPING, 0, _SEQ_CST)

    def _decode(self, off):
        (kind, text_bytes, request_id, sink_ns, token, logprob, num_top, reason, num_prompt, _cached,
         num_generated, _preemptions, queue_s, prefill_s, first_token_s, finish_s, _code,
         _flags) = _RESPONSE.unpack_from(self._mm, off)
        text = bytes(self._mm[off + 256:off + 256 + min(text_bytes, RESPONSE_TEXT_BYTES)])
        top = []
        for i in range(min(num_top, 20)):
            top.append(struct.unpack_from("<if", self._mm, off + 96 + 8 * i))
        detail = None
        if kind in (RESPONSE_FINISH, RESPONSE_ERROR):
            detail, text = text.decode("utf-8", "replace"), b""
        timings = dict(queue_s=queue_s, prefill_s=prefill_s, first_token_s=first_token_s, finish_s=finish_s)
        reason_name = FINISH_REASONS[reason] if kind == RESPONSE_FINISH and reason < 4 else None
        return Event(kind, request_id, token, text, logprob, top, reason_name, detail, num_prompt,
                     num_generated, timings, sink_ns, _now_ns())

    def events(self, request_id, timeout=None):
        """Yields the events of one request, up to and including its terminal one."""
        queue = self._pending.setdefault(request_id, deque())
        try:
            while True:
                event = queue.popleft() if queue else self.next_event(timeout)
                if event.request_id != request_id:
                    self._pending.setdefault(event.request_id, deque()).append(event)
                    continue
                yield event
                if event.kind in (RESPONSE_FINISH, RESPONSE_ERROR):
                    return
        finally:
            self._pending.pop(request_id, None)

    def stream(self, prompt, timeout=None, **params):
        """Submits and yields events: tokens (kind RESPONSE_TOKEN/TEXT), then the FINISH event.
        A rejected request raises RequestError; closing the iterator early cancels it."""
        request_id = self.submit(prompt, **params)
        done = False
        try:
            for event in self.events(request_id, timeout):
                if event.kind == RESPONSE_ERROR:
                    done = True
                    raise RequestError(event.detail)
                done = event.kind == RESPONSE_FINISH
                yield event
        finally:
            if not done:
                try:
                    self.cancel(request_id)
                except ZerolayerError:
                    pass

    def generate(self, prompt, timeout=None, **params):
        """Blocking: returns a Result with tokens, text, finish_reason, timings."""
        tokens, text = [], bytearray()
        for event in self.stream(prompt, timeout, **params):
            if event.kind == RESPONSE_TOKEN:
                tokens.append(event.token)
            if event.kind == RESPONSE_FINISH:
                return Result(tokens, text.decode("utf-8", "replace"), event.finish_reason, event.detail,
                              event.num_prompt_tokens, event.num_generated_tokens, event.timings)
            text += event.text
        raise ZerolayerError("the stream ended without a terminal event")

    def close(self):
        if self._mm is None:
            return
        self._stop.set()
        self._heartbeat.join()
        addr = self._client_addr(self.slot)
        if _load8(addr + _C_GENERATION, _SEQ_CST) == self._generation:
            expected = ctypes.c_uint32(CLIENT_ACTIVE)
            _cas4(addr + _C_STATE, ctypes.byref(expected), CLIENT_CLOSING, _SEQ_CST, _SEQ_CST)
        del self._buf
        self._mm.close()
        self._mm = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _encode_chat(messages):
    parts = []
    for m in messages:
        role = CHAT_ROLES.get(m.get("role"))
        if role is None:
            raise ValueError(f"chat role must be one of {sorted(CHAT_ROLES)}, got {m.get('role')!r}")
        content = m.get("content", "").encode("utf-8")
        parts.append(struct.pack("<II", role, len(content)) + content)
    return b"".join(parts)


def connect(name="/zerolayer-8000"):
    return Client(name)
