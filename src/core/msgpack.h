// A MessagePack writer for the few types zerolayer sends (nil, unsigned and
// signed integers, float64, str, bin, array and map headers), in the
// smallest encoding for each value as the spec asks
// (https://github.com/msgpack/msgpack/blob/master/spec.md). Debian 12's
// msgpack-cxx package cannot be installed beside Boost 1.81, and encoding is
// all the KV-event publisher needs; tests decode its output with the msgpack
// package from PyPI.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace zl {

class MsgpackWriter {
 public:
  void nil() { out_.push_back(char(0xc0)); }
  void boolean(bool v) { out_.push_back(char(v ? 0xc3 : 0xc2)); }
  void uint(uint64_t v) {
    if (v < 128) return out_.push_back(char(v));
    if (v <= UINT8_MAX) return tagged(0xcc, v, 1);
    if (v <= UINT16_MAX) return tagged(0xcd, v, 2);
    if (v <= UINT32_MAX) return tagged(0xce, v, 4);
    tagged(0xcf, v, 8);
  }
  void integer(int64_t v) {
    if (v >= 0) return uint(static_cast<uint64_t>(v));
    if (v >= -32) return out_.push_back(char(static_cast<uint8_t>(v)));  // negative fixint
    if (v >= INT8_MIN) return tagged(0xd0, static_cast<uint64_t>(v), 1);
    if (v >= INT16_MIN) return tagged(0xd1, static_cast<uint64_t>(v), 2);
    if (v >= INT32_MIN) return tagged(0xd2, static_cast<uint64_t>(v), 4);
    tagged(0xd3, static_cast<uint64_t>(v), 8);
  }
  void float64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    tagged(0xcb, bits, 8);
  }
  void str(std::string_view s) {
    if (s.size() < 32) out_.push_back(char(0xa0 | s.size()));
    else header(0xd9, 0xda, 0xdb, s.size());
    out_.append(s);
  }
  void bin(const void* data, size_t n) {
    header(0xc4, 0xc5, 0xc6, n);
    out_.append(static_cast<const char*>(data), n);
  }
  void array(uint32_t n) {
    if (n < 16) return out_.push_back(char(0x90 | n));
    n <= UINT16_MAX ? tagged(0xdc, n, 2) : tagged(0xdd, n, 4);
  }
  void map(uint32_t n) {
    if (n < 16) return out_.push_back(char(0x80 | n));
    n <= UINT16_MAX ? tagged(0xde, n, 2) : tagged(0xdf, n, 4);
  }

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }
  void clear() { out_.clear(); }

 private:
  // `tag`, then the low `width` bytes of v, big-endian.
  void tagged(uint8_t tag, uint64_t v, int width) {
    out_.push_back(char(tag));
    for (int i = width - 1; i >= 0; --i) out_.push_back(char((v >> (8 * i)) & 0xff));
  }
  // A str or bin length in its 8-, 16- or 32-bit form.
  void header(uint8_t tag8, uint8_t tag16, uint8_t tag32, size_t n) {
    if (n <= UINT8_MAX) tagged(tag8, n, 1);
    else if (n <= UINT16_MAX) tagged(tag16, n, 2);
    else tagged(tag32, n, 4);
  }

  std::string out_;
};

}  // namespace zl
