#include "cuda/cuda_tuning.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>

namespace chorus::cuda {
namespace {

// One table for parsing and printing, so a new field cannot be settable but unlogged.
struct Field {
  const char* name;
  int32_t CudaTuning::*member;
};
constexpr Field kFields[] = {
    {"attn_cluster_max_rows", &CudaTuning::attn_cluster_max_rows},
    {"attn_chunks_per_block", &CudaTuning::attn_chunks_per_block},
    {"attn_row_max_rows", &CudaTuning::attn_row_max_rows},
    {"attn_row_warps", &CudaTuning::attn_row_warps},
    {"attn_row_split_max_rows", &CudaTuning::attn_row_split_max_rows},
    {"attn_row_split_parts", &CudaTuning::attn_row_split_parts},
    {"attn_row_kv_phases", &CudaTuning::attn_row_kv_phases},
    {"gemv_x_budget_bytes", &CudaTuning::gemv_x_budget_bytes},
    {"gemv_early_loads", &CudaTuning::gemv_early_loads},
    {"gemv_pair_max_rows", &CudaTuning::gemv_pair_max_rows},
    {"gemm_ref_rows", &CudaTuning::gemm_ref_rows},
    {"norm_pass_min_rows", &CudaTuning::norm_pass_min_rows},
    {"norm_from_producer", &CudaTuning::norm_from_producer},
};
// The fields of one value per GEMV launch kind (Q.O.U.D), each with the example its error gives.
struct PerGemvField {
  const char* name;
  CudaTuning::PerGemv CudaTuning::*member;
  const char* meaning;
};
constexpr PerGemvField kPerGemvFields[] = {
    {"gemv_splits", &CudaTuning::gemv_splits, "split counts; 0: automatic), e.g. 4.8.1.8"},
    {"gemv_spread", &CudaTuning::gemv_spread, "the rows from which each spreads its blocks; 0: never), e.g. 0.0.1.0"},
};

std::string known_keys() {
  std::string s;
  for (const Field& f : kFields) s += std::string(f.name) + ", ";
  for (const PerGemvField& f : kPerGemvFields) s += std::string(f.name) + ", ";
  s.resize(s.size() - 2);  // the last ", "
  return s;
}

// A whole non-negative int32 or nothing ("8", not "8x", "-1" or "").
bool parse_count(std::string_view text, int32_t& out) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0 ||
      v > std::numeric_limits<int32_t>::max()) {
    return false;
  }
  out = static_cast<int32_t>(v);
  return true;
}

Status parse_per_gemv(const PerGemvField& field, std::string_view text, CudaTuning::PerGemv& out) {
  int32_t* parts[] = {&out.qkv, &out.o, &out.ffn_up, &out.down};
  for (size_t i = 0; i < 4; ++i) {
    const size_t dot = i < 3 ? text.find('.') : text.size();
    if (dot == std::string_view::npos || !parse_count(text.substr(0, dot), *parts[i])) {
      return make_error(std::string(field.name) + " takes four counts Q.O.U.D (q|k|v, output, gate|up, down: " +
                        field.meaning);
    }
    text.remove_prefix(std::min(text.size(), dot + 1));
  }
  return Ok{};
}

}  // namespace

Result<CudaTuning> parse_cuda_tuning(std::string_view spec, const CudaTuning& base) {
  CudaTuning t = base;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec.remove_prefix(comma == std::string_view::npos ? spec.size() : comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return make_error("'" + std::string(item) + "' is not key=value (keys: " + known_keys() + ")");
    }
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    const PerGemvField* per_gemv = nullptr;
    for (const PerGemvField& f : kPerGemvFields) {
      if (key == f.name) per_gemv = &f;
    }
    if (per_gemv != nullptr) {
      CHORUS_TRY(parse_per_gemv(*per_gemv, value, t.*(per_gemv->member)));
      continue;
    }
    const Field* field = nullptr;
    for (const Field& f : kFields) {
      if (key == f.name) field = &f;
    }
    if (field == nullptr) {
      return make_error("unknown key '" + std::string(key) + "' (keys: " + known_keys() + ")");
    }
    if (!parse_count(value, t.*(field->member))) {
      return make_error(std::string(field->name) + " takes a non-negative integer, not '" + std::string(value) + "'");
    }
  }
  return t;
}

std::string format_cuda_tuning(const CudaTuning& t) {
  std::string s;
  for (const Field& f : kFields) s += std::string(f.name) + "=" + std::to_string(t.*(f.member)) + ",";
  for (const PerGemvField& f : kPerGemvFields) {
    const CudaTuning::PerGemv& v = t.*(f.member);
    s += std::string(f.name) + "=" + std::to_string(v.qkv) + "." + std::to_string(v.o) + "." +
         std::to_string(v.ffn_up) + "." + std::to_string(v.down) + ",";
  }
  s.pop_back();  // the last comma
  return s;
}

}  // namespace chorus::cuda
