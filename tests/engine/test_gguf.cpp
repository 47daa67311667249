// GGUF reader/writer: round trips of every metadata type, and robustness against truncated
// and corrupted files (each must give an error, never a crash).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/gguf/gguf_reader.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_file.h"
#include "support/test_support.h"

namespace chorus::gguf {
namespace {

Writer sample_writer() {
  Writer w;
  Value u8; u8.type = ValueType::UINT8; u8.i = 200; u8.u = 200;
  Value i16; i16.type = ValueType::INT16; i16.i = -1234;
  Value f64; f64.type = ValueType::FLOAT64; f64.f = 3.25;
  w.set("test.u8", u8);
  w.set("test.i16", i16);
  w.set("test.u32", Value::make_u32(4000000000u));
  w.set("test.i32", Value::make_i32(-7));
  w.set("test.u64", Value::make_u64(1ull << 40));
  w.set("test.f32", Value::make_f32(0.5f));
  w.set("test.f64", f64);
  w.set("test.bool", Value::make_bool(true));
  w.set("test.string", Value::make_string("héllo"));
  w.set("test.strings", Value::make_string_array({"a", "", "ccc"}));
  w.set("test.nested", Value::make_array(ValueType::ARRAY, {Value::make_i32_array({1, 2}), Value::make_i32_array({3})}));
  std::vector<uint8_t> f32(4 * 8 * 2);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<uint8_t>(i);
  EXPECT_TRUE(w.add_tensor("a.weight", TensorType::F32, {8, 2}, f32).ok());
  std::vector<uint8_t> q8(34 * 2, 7);
  EXPECT_TRUE(w.add_tensor("b.weight", TensorType::Q8_0, {32, 2}, q8).ok());
  return w;
}

TEST(Gguf, RoundTripsEveryMetadataType) {
  const std::vector<uint8_t> bytes = sample_writer().to_bytes();
  auto r = Reader::parse(bytes.data(), bytes.size(), "mem");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->version(), 3u);
  EXPECT_EQ(*r->get_uint("test.u8"), 200u);
  EXPECT_EQ(r->find("test.i16")->i, -1234);
  EXPECT_EQ(*r->get_uint("test.u32"), 4000000000u);
  EXPECT_EQ(r->find("test.i32")->i, -7);
  EXPECT_EQ(*r->get_uint("test.u64"), 1ull << 40);
  EXPECT_EQ(*r->get_float("test.f32"), 0.5);
  EXPECT_EQ(*r->get_float("test.f64"), 3.25);
  EXPECT_TRUE(*r->get_bool("test.bool"));
  EXPECT_EQ(*r->get_string("test.string"), "héllo");
  EXPECT_EQ(*r->get_string_array("test.strings"), (std::vector<std::string>{"a", "", "ccc"}));
  const Value* nested = r->find("test.nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->array.size(), 2u);
  EXPECT_EQ(nested->array[0].array[1].i, 2);
  EXPECT_EQ(nested->array[1].array[0].i, 3);
  EXPECT_FALSE(r->get_string("test.u32").ok());
  EXPECT_FALSE(r->get_uint("missing.key").ok());
  ASSERT_EQ(r->tensors().size(), 2u);
  const TensorInfo* a = r->find_tensor("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->ne[0], 8);
  EXPECT_EQ(a->ne[1], 2);
  EXPECT_EQ(a->size_bytes, 64u);
  EXPECT_EQ(a->data[5], 5);
  const TensorInfo* b = r->find_tensor("b.weight");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->size_bytes, 68u);
  EXPECT_EQ((b->data - bytes.data()) % 32, 0);
}

TEST(Gguf, HonoursCustomAlignment) {
  Writer w(64);
  std::vector<uint8_t> d(4 * 3, 1);
  ASSERT_TRUE(w.add_tensor("x", TensorType::F32, {3}, d).ok());
  ASSERT_TRUE(w.add_tensor("y", TensorType::F32, {3}, d).ok());
  const auto bytes = w.to_bytes();
  auto r = Reader::parse(bytes.data(), bytes.size(), "mem");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->alignment(), 64u);
  EXPECT_EQ((r->find_tensor("y")->data - bytes.data()) % 64, 0);
}

TEST(Gguf, RejectsBadMagicAndVersion) {
  auto bytes = sample_writer().to_bytes();
  auto bad = bytes;
  bad[0] = 'X';
  auto r = Reader::parse(bad.data(), bad.size(), "f.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("not a GGUF file"), std::string::npos);
  bad = bytes;
  bad[4] = 9;
  r = Reader::parse(bad.data(), bad.size(), "f.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("version 9"), std::string::npos);
}

TEST(Gguf, EveryTruncationIsAnError) {
  const auto bytes = sample_writer().to_bytes();
  // Padding after the last tensor is not needed, so the file is complete at its data's end.
  auto whole = Reader::parse(bytes.data(), bytes.size(), "whole.gguf");
  ASSERT_TRUE(whole.ok());
  const TensorInfo& last = whole->tensors().back();
  const size_t data_end = static_cast<size_t>(last.data - bytes.data()) + last.size_bytes;
  for (size_t n = 0; n < data_end; ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = Reader::parse(cut.data(), cut.size(), "cut.gguf");
    EXPECT_FALSE(r.ok()) << "a file cut to " << n << " bytes parsed";
    if (!r.ok()) {
      EXPECT_NE(r.message().find("cut.gguf"), std::string::npos) << r.message();
    }
  }
}

TEST(Gguf, HugeCountsAreRejectedBeforeAllocation) {
  Writer w;
  w.set("k", Value::make_string_array({"x"}));
  auto bytes = w.to_bytes();
  // The array length field follows magic, version, counts, key (8+1 bytes), type and elem type.
  const size_t len_at = 4 + 4 + 8 + 8 + 8 + 1 + 4 + 4;
  uint64_t huge = 1ull << 60;
  std::memcpy(bytes.data() + len_at, &huge, 8);
  auto r = Reader::parse(bytes.data(), bytes.size(), "huge.gguf");
  EXPECT_FALSE(r.ok());
}

// Corrupts a real model file at random (byte flips, splices of 0xFF runs, truncation) and
// opens each result as a model: every outcome is a parsed model or an error message.
TEST(Gguf, MutatedRealModelsNeverCrash) {
  const auto path = test::peer_dir() / "logits" / "tiny-llama-q4_0.gguf";
  const std::string original = test::read_file(path);
  std::mt19937_64 rng(20261202);
  int n_errors = 0;
  const int kFiles = 240;
  for (int k = 0; k < kFiles; ++k) {
    std::string bytes = original;
    // Most corruption lands in the header and tables, where parsing decisions are made.
    const size_t header_span = std::min<size_t>(bytes.size(), 200000);
    const int n_flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < n_flips; ++f) {
      const size_t at = rng() % header_span;
      switch (rng() % 3) {
        case 0: bytes[at] = static_cast<char>(rng()); break;
        case 1: bytes[at] = static_cast<char>(0xFF); break;
        default: bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8))); break;
      }
    }
    if (k % 3 == 0) bytes.resize(rng() % bytes.size());
    const auto file = test::scratch_dir() / ("mutated-" + std::to_string(k) + ".gguf");
    test::write_file(file, bytes);
    auto m = ModelFile::open(file.string());
    if (!m.ok()) {
      ++n_errors;
      EXPECT_FALSE(m.message().empty());
    }
    std::filesystem::remove(file);
  }
  // Truncation alone guarantees a third of the files fail.
  EXPECT_GE(n_errors, kFiles / 3);
}

}  // namespace
}  // namespace chorus::gguf
