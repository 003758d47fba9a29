#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "model/rewrite_file.h"
#include "model/safetensors_writer.h"
#include "test_util.h"

namespace zl {
namespace {

using test::SafetensorsWriter;
using test::write_temp_file;

// Two F32 tensors: a [2, 3] and b [4].
SafetensorsWriter two_tensors() {
  SafetensorsWriter w;
  w.add_f32("a", {2, 3}, {1, 2, 3, 4, 5, 6});
  w.add_f32("b", {4}, {7, 8, 9, 10});
  return w;
}

// The error's message, or "" (with a test failure) when it succeeded.
std::string error_of(const std::string& path, StatusCode code) {
  StatusOr<TensorIndex> index = read_safetensors(path);
  EXPECT_FALSE(index.ok());
  if (index.ok()) return "";
  EXPECT_EQ(index.status().code(), code) << index.status().to_string();
  return index.status().message();
}

TEST(SafetensorsTest, ReadsShapesAndData) {
  SafetensorsWriter w = two_tensors();
  w.extra_entries = R"("__metadata__":{"format":"pt"})";
  w.add("h", "F16", {2}, std::string("\x00\x3c\x00\xc0", 4));  // 1.0, -2.0
  w.add("z", "BF16", {1, 2}, std::string("\x80\x3f\x00\x40", 4));  // 1.0, 2.0
  std::string path = write_temp_file("st/valid.safetensors", w.build());
  StatusOr<TensorIndex> index = read_safetensors(path);
  ASSERT_TRUE(index.ok()) << index.status().to_string();
  ASSERT_EQ(index->size(), 4u);
  const TensorInfo& a = index->at("a");
  EXPECT_EQ(a.dtype, DType::kF32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.num_bytes, 24u);
  float values[6];
  std::memcpy(values, a.data, 24);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[5], 6.0f);
  EXPECT_EQ(index->at("b").shape, (std::vector<int64_t>{4}));
  float b0;
  std::memcpy(&b0, index->at("b").data, 4);
  EXPECT_EQ(b0, 7.0f);
  float h[2];
  dtype_to_f32(DType::kF16, index->at("h").data, h, 2);
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  float z[2];
  dtype_to_f32(DType::kBF16, index->at("z").data, z, 2);
  EXPECT_EQ(z[1], 2.0f);
  EXPECT_EQ(index->at("z").dtype, DType::kBF16);
  EXPECT_NE(a.file, nullptr);
}

TEST(SafetensorsTest, MissingFileIsNotFound) {
  StatusOr<TensorIndex> index = read_safetensors(test::temp_dir() + "/nope.safetensors");
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), StatusCode::kNotFound);
  EXPECT_NE(index.status().message().find("nope.safetensors"), std::string::npos);
}

TEST(SafetensorsTest, EveryTruncationFails) {
  std::string bytes = two_tensors().build();
  std::string path = write_temp_file("st/trunc.safetensors", "");
  for (size_t len = 0; len < bytes.size(); ++len) {
    ASSERT_TRUE(test::rewrite_file(path, bytes.substr(0, len)));
    StatusOr<TensorIndex> index = read_safetensors(path);
    EXPECT_FALSE(index.ok()) << "length " << len;
    if (!index.ok()) {
      EXPECT_NE(index.status().message().find("trunc.safetensors"), std::string::npos);
    }
  }
}

TEST(SafetensorsTest, AbsurdHeaderLength) {
  SafetensorsWriter w = two_tensors();
  w.header_len_override = 1ull << 62;
  std::string msg = error_of(write_temp_file("st/hlen.safetensors", w.build()), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("hlen.safetensors"), std::string::npos);
  EXPECT_NE(msg.find("header length"), std::string::npos);
}

TEST(SafetensorsTest, OffsetsOutsideData) {
  SafetensorsWriter w = two_tensors();
  w.add_f32("c", {1}, {1}).offsets = std::make_pair(40ull, 1ull << 40);
  std::string msg = error_of(write_temp_file("st/offs.safetensors", w.build()), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("offs.safetensors"), std::string::npos);
  EXPECT_NE(msg.find("\"c\""), std::string::npos);
  EXPECT_NE(msg.find("data_offsets"), std::string::npos);
}

TEST(SafetensorsTest, ReversedOffsets) {
  SafetensorsWriter w = two_tensors();
  w.add_f32("c", {1}, {1}).offsets = std::make_pair(44ull, 40ull);
  std::string msg = error_of(write_temp_file("st/rev.safetensors", w.build()), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("\"c\""), std::string::npos);
}

TEST(SafetensorsTest, ShapeBytesMismatch) {
  SafetensorsWriter w;
  w.add_f32("w", {2, 2}, {1, 2, 3});  // 3 floats for 4 elements
  std::string msg = error_of(write_temp_file("st/mismatch.safetensors", w.build()), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("mismatch.safetensors"), std::string::npos);
  EXPECT_NE(msg.find("\"w\""), std::string::npos);
  EXPECT_NE(msg.find("[2, 2]"), std::string::npos);
}

TEST(SafetensorsTest, HugeShapeOverflowIsCaught) {
  SafetensorsWriter w;
  w.add("w", "F32", {1ll << 40, 1ll << 40}, std::string(4, '\0'));
  std::string msg = error_of(write_temp_file("st/huge.safetensors", w.build()), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("\"w\""), std::string::npos);
  SafetensorsWriter w2;
  w2.add("w", "F32", {1ll << 61}, std::string(4, '\0'));  // 2^63 bytes wraps in dtype_bytes
  msg = error_of(write_temp_file("st/huge2.safetensors", w2.build()), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("\"w\""), std::string::npos);
}

TEST(SafetensorsTest, OverlappingTensors) {
  SafetensorsWriter w = two_tensors();
  w.add_f32("c", {2}, {1, 2}).offsets = std::make_pair(20ull, 28ull);  // inside a and b
  std::string msg = error_of(write_temp_file("st/overlap.safetensors", w.build()), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("overlap.safetensors"), std::string::npos);
  EXPECT_NE(msg.find("overlaps"), std::string::npos);
  EXPECT_NE(msg.find("\"c\""), std::string::npos);
}

TEST(SafetensorsTest, UnsupportedDtypeIsUnimplemented) {
  SafetensorsWriter w;
  w.add("ids", "I64", {1}, std::string(8, '\0'));
  std::string msg = error_of(write_temp_file("st/i64.safetensors", w.build()), StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("i64.safetensors"), std::string::npos);
  EXPECT_NE(msg.find("\"ids\""), std::string::npos);
  EXPECT_NE(msg.find("I64"), std::string::npos);
}

TEST(SafetensorsTest, DuplicateNamesRejected) {
  SafetensorsWriter w;
  w.header_override = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                      R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  w.add_f32("ignored", {2}, {1, 2});
  std::string msg = error_of(write_temp_file("st/dup.safetensors", w.build()), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("duplicate"), std::string::npos);
  EXPECT_NE(msg.find("\"a\""), std::string::npos);
}

TEST(SafetensorsTest, MalformedHeaders) {
  const char* headers[] = {
      "[1,2]",
      "{\"a\":5}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":\"1\",\"data_offsets\":[0,4]}}",
      "{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}",
      "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
  };
  for (const char* header : headers) {
    SafetensorsWriter w;
    w.header_override = header;
    w.add_f32("a", {1}, {1});
    StatusOr<TensorIndex> index = read_safetensors(write_temp_file("st/bad.safetensors", w.build()));
    EXPECT_FALSE(index.ok()) << header;
    if (!index.ok()) {
      EXPECT_NE(index.status().message().find("bad.safetensors"), std::string::npos);
    }
  }
}

TEST(SafetensorsTest, ShardedModelDirectory) {
  SafetensorsWriter s1, s2;
  s1.add_f32("x", {1}, {1});
  s2.add_f32("y", {2}, {2, 3});
  write_temp_file("sharded/model-00001-of-00002.safetensors", s1.build());
  write_temp_file("sharded/model-00002-of-00002.safetensors", s2.build());
  std::string index_path = write_temp_file("sharded/model.safetensors.index.json",
      R"({"metadata":{"total_size":12},"weight_map":{"x":"model-00001-of-00002.safetensors",)"
      R"("y":"model-00002-of-00002.safetensors"}})");
  std::string dir = test::temp_dir() + "/sharded";
  StatusOr<TensorIndex> index = read_safetensors_model(dir);
  ASSERT_TRUE(index.ok()) << index.status().to_string();
  EXPECT_EQ(index->size(), 2u);
  EXPECT_EQ(index->at("y").shape, (std::vector<int64_t>{2}));

  // A tensor mapped to a shard that lacks it.
  write_temp_file("sharded/model.safetensors.index.json",
      R"({"weight_map":{"x":"model-00002-of-00002.safetensors"}})");
  index = read_safetensors_model(dir);
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.status().message().find("model.safetensors.index.json"), std::string::npos);
  EXPECT_NE(index.status().message().find("\"x\""), std::string::npos);

  // The same tensor in two shards.
  SafetensorsWriter s3;
  s3.add_f32("x", {1}, {1});
  s3.add_f32("y", {1}, {1});
  write_temp_file("sharded/model-00003.safetensors", s3.build());
  write_temp_file("sharded/model.safetensors.index.json",
      R"({"weight_map":{"x":"model-00001-of-00002.safetensors","y":"model-00003.safetensors"}})");
  index = read_safetensors_model(dir);
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.status().message().find("\"x\" appears in both"), std::string::npos)
      << index.status().message();
}

TEST(SafetensorsTest, ShardPathTraversalRejected) {
  SafetensorsWriter s;
  s.add_f32("x", {1}, {1});
  write_temp_file("outside.safetensors", s.build());
  const char* shards[] = {"../outside.safetensors", "/etc/passwd", "..", "", "a\\\\b"};
  for (const char* shard : shards) {
    write_temp_file("trav/model.safetensors.index.json",
                    std::string(R"({"weight_map":{"x":")") + shard + "\"}}");
    StatusOr<TensorIndex> index = read_safetensors_model(test::temp_dir() + "/trav");
    ASSERT_FALSE(index.ok()) << shard;
    EXPECT_NE(index.status().message().find("plain file name"), std::string::npos) << shard;
    EXPECT_NE(index.status().message().find("\"x\""), std::string::npos);
  }
}

TEST(SafetensorsTest, SingleFileModelAndMissingDirectory) {
  write_temp_file("single/model.safetensors", two_tensors().build());
  StatusOr<TensorIndex> index = read_safetensors_model(test::temp_dir() + "/single");
  ASSERT_TRUE(index.ok()) << index.status().to_string();
  EXPECT_EQ(index->size(), 2u);
  index = read_safetensors_model(test::temp_dir() + "/no_such_dir");
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace zl
