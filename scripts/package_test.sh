#!/usr/bin/env bash
# Builds the Debian package (scripts/package.sh), installs it with dpkg -i and
# tries what it installed: zerolayer --version; `zerolayer serve` from
# /usr/bin on dummy:tiny (directly: CI has no systemd) with the environment
# of /etc/default/zerolayer uncommented, /health, one /v1/completions and
# SIGTERM's exit 0; the unit through systemd-analyze verify where that
# exists; the Python client imported from dist-packages; a C program built
# against the installed header and linked with the installed library
# (shared, via pkg-config, and static). Then dpkg -r and dpkg --purge put the
# machine back as it was (also on failure). Exits non-zero on any failure.
#   scripts/package_test.sh [BUILD_DIR]    # default build-pkg/, as package.sh
# Runs as root, else through sudo. Refuses to run where a zerolayer package
# is installed already.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
step() { echo "package_test: $*"; }
fail() { echo "package_test: FAIL: $*" >&2; exit 1; }

# dpkg's state of zerolayer: empty or "... not-installed" when it knows none.
package_state() { dpkg-query -W -f='${Status}' zerolayer 2>/dev/null || true; }
known() { case "$(package_state)" in "" | *not-installed) return 1 ;; esac; }

if known; then
  fail "a zerolayer package is on this machine already ($(dpkg-query -W -f='${Version} ${Status}' zerolayer)); remove it first"
fi

start=$SECONDS
deb="$(scripts/package.sh "$@" | tail -n 1)"
step "built $deb in $((SECONDS - start)) s"
dpkg-deb --field "$deb" Package Version Architecture Depends Recommends Installed-Size | sed 's/^/  /'
dpkg-deb --contents "$deb" | awk '{print "  " $6 ($7 ? " " $7 " " $8 : "")}'

work="$(mktemp -d)"
server_pid=""
installed=0
cleanup() {
  local rc=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  if [ "$installed" = 1 ]; then $SUDO dpkg --purge zerolayer >/dev/null 2>&1 || true; fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

step "dpkg -i"
installed=1
$SUDO dpkg -i "$deb"
[ "$(package_state)" = "install ok installed" ] || fail "dpkg says: $(package_state)"
case "$(dpkg-query -W -f='${Conffiles}' zerolayer)" in *" /etc/default/zerolayer "*) ;; *) fail "/etc/default/zerolayer is not a conffile" ;; esac

step "zerolayer --version"
version="$(/usr/bin/zerolayer --version)"
echo "  $version"
deb_version="$(dpkg-query -W -f='${Version}' zerolayer)"
[ "$version" = "zerolayer $deb_version" ] || fail "--version says '$version', the package is $deb_version"

# Every ZEROLAYER_* that serve reads is listed in /etc/default/zerolayer, and
# every one listed there is a flag's (or ZEROLAYER_LOG_LEVEL).
step "/etc/default/zerolayer against serve --help"
scripts/check_env_file.sh /usr/bin/zerolayer /etc/default/zerolayer || fail "/etc/default/zerolayer and serve --help differ"

if command -v systemd-analyze >/dev/null; then
  step "systemd-analyze verify zerolayer.service"
  # Needs no running systemd; unknown keys and bad values are only warnings
  # there, so any output fails too.
  if ! systemd-analyze verify /usr/lib/systemd/system/zerolayer.service >"$work/verify" 2>&1 || [ -s "$work/verify" ]; then
    sed 's/^/  /' "$work/verify"
    fail "systemd-analyze verify reported the lines above"
  fi
else
  step "skipped: systemd-analyze verify (no systemd-analyze on this machine)"
fi

step "zerolayer serve (the installed binary, /etc/default/zerolayer's values uncommented)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# The documented defaults, as the service would read them once uncommented;
# the flags below win over them.
mapfile -t defaults < <(sed -n 's/^#\(\(ZEROLAYER\|HF\)_[A-Z0-9_]*=..*\)$/\1/p' /etc/default/zerolayer)
(cd "$work" && exec env "${defaults[@]}" /usr/bin/zerolayer serve --model dummy:tiny --port "$port" --shm-name '' \
  >"$work/serve.log" 2>&1) &
server_pid=$!
python3 - "$port" "$server_pid" <<'PY' || { sed 's/^/  serve: /' "$work/serve.log"; fail "the server did not answer"; }
import json, os, sys, time, urllib.error, urllib.request
port, pid = int(sys.argv[1]), int(sys.argv[2])
base = f"http://127.0.0.1:{port}"
deadline = time.monotonic() + 60
while True:
    try:
        with urllib.request.urlopen(base + "/health", timeout=2) as r:
            if r.status == 200:
                break
    except (urllib.error.URLError, ConnectionError, OSError):
        pass
    if time.monotonic() > deadline:
        sys.exit("no /health 200 within 60 s")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("the server exited")
    time.sleep(0.2)
print("  /health: 200")
body = json.dumps({"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0, "ignore_eos": True}).encode()
req = urllib.request.Request(base + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=60) as r:
    out = json.load(r)
assert r.status == 200, r.status
assert out["object"] == "text_completion", out
assert out["usage"]["completion_tokens"] == 8, out["usage"]
print(f"  /v1/completions: 200, {out['usage']['completion_tokens']} tokens: {out['choices'][0]['text']!r}")
PY
kill -TERM "$server_pid"
serve_rc=0
wait "$server_pid" || serve_rc=$?
server_pid=""
sed 's/^/  serve: /' "$work/serve.log"
[ "$serve_rc" = 0 ] || fail "serve exited $serve_rc after SIGTERM"
step "serve exited 0 after SIGTERM"

step "/usr/bin/python3: zerolayer_client from dist-packages"
# Debian's python3 (the one the package is for; a pyenv or venv python3 on
# PATH does not read /usr/lib/python3/dist-packages). -I: no current
# directory, PYTHONPATH or user site on the path; -B: no byte code left behind.
(cd "$work" && /usr/bin/python3 -I -B - <<'PY')
import zerolayer_client as zl
assert zl.__file__ == "/usr/lib/python3/dist-packages/zerolayer_client.py", zl.__file__
try:
    zl.connect("/zerolayer-package-test-none")
except zl.ZerolayerError as e:
    print(f"  {zl.__file__}: connect to no segment raises ZerolayerError: {e}")
else:
    raise SystemExit("connect to a missing segment did not raise")
PY

step "C: the installed header and libzerolayer_client"
cat >"$work/client.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <zerolayer/client.h>
#include <zerolayer/stats_protocol.h>

int main(void) {
  zl_request req;
  zl_request_init(&req);
  zl_client* client = NULL;
  int rc = zl_client_connect("/zerolayer-package-test-none", &client);
  if (rc != ZL_ERR_NOT_FOUND) {
    fprintf(stderr, "zl_client_connect: %d, not ZL_ERR_NOT_FOUND\n", rc);
    return 1;
  }
  printf("zl_client_connect: ZL_ERR_NOT_FOUND (%s)\n", zl_client_last_error(NULL));
  return 0;
}
EOF
# pkg-config names the library; ldconfig (the package's trigger) lets the
# loader find libzerolayer_client.so.0 with no LD_LIBRARY_PATH.
cc -std=c11 -Wall -Werror -o "$work/client_shared" "$work/client.c" $(pkg-config --cflags --libs zerolayer-client)
libs="$(ldd "$work/client_shared")"
case "$libs" in *"libzerolayer_client.so.0 => /usr/lib/"* | *"libzerolayer_client.so.0 => /lib/"*) ;; *) fail "client_shared: $libs" ;; esac
echo "  shared: $("$work/client_shared")"
cc -std=c11 -Wall -Werror -o "$work/client_static" "$work/client.c" $(pkg-config --cflags zerolayer-client) \
  "$(pkg-config --variable=libdir zerolayer-client)/libzerolayer_client.a" -lstdc++ -lpthread
case "$(ldd "$work/client_static")" in *libzerolayer_client*) fail "client_static links the shared library" ;; esac
echo "  static: $("$work/client_static")"

step "dpkg -r, then dpkg --purge"
$SUDO dpkg -r zerolayer
for f in /usr/bin/zerolayer /usr/lib/python3/dist-packages/zerolayer_client.py /usr/include/zerolayer/client.h \
         /usr/lib/systemd/system/zerolayer.service; do
  [ ! -e "$f" ] || fail "$f is still there after dpkg -r"
done
[ -f /etc/default/zerolayer ] || fail "dpkg -r removed the conffile /etc/default/zerolayer"
$SUDO dpkg --purge zerolayer
installed=0
[ ! -e /etc/default/zerolayer ] || fail "/etc/default/zerolayer is still there after dpkg --purge"
! known || fail "dpkg still knows zerolayer: $(package_state)"
[ -z "$(ls /usr/lib/*/libzerolayer_client* 2>/dev/null)" ] || fail "libzerolayer_client is still there"
step "ok ($((SECONDS - start)) s in all)"
