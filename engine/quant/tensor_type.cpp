#include "engine/quant/tensor_type.h"

#include <cassert>

namespace chorus {

std::optional<TensorTypeTraits> tensor_type_traits(uint32_t type_id) {
  switch (static_cast<TensorType>(type_id)) {
    case TensorType::F32: return TensorTypeTraits{"F32", 1, 4, true};
    case TensorType::F16: return TensorTypeTraits{"F16", 1, 2, true};
    case TensorType::BF16: return TensorTypeTraits{"BF16", 1, 2, true};
    case TensorType::Q4_0: return TensorTypeTraits{"Q4_0", 32, 18, true};
    case TensorType::Q4_1: return TensorTypeTraits{"Q4_1", 32, 20, true};
    case TensorType::Q5_0: return TensorTypeTraits{"Q5_0", 32, 22, true};
    case TensorType::Q5_1: return TensorTypeTraits{"Q5_1", 32, 24, true};
    case TensorType::Q8_0: return TensorTypeTraits{"Q8_0", 32, 34, true};
    case TensorType::Q8_1: return TensorTypeTraits{"Q8_1", 32, 36, false};
    case TensorType::Q2_K: return TensorTypeTraits{"Q2_K", 256, 84, false};
    case TensorType::Q3_K: return TensorTypeTraits{"Q3_K", 256, 110, false};
    case TensorType::Q4_K: return TensorTypeTraits{"Q4_K", 256, 144, true};
    case TensorType::Q5_K: return TensorTypeTraits{"Q5_K", 256, 176, true};
    case TensorType::Q6_K: return TensorTypeTraits{"Q6_K", 256, 210, true};
    case TensorType::Q8_K: return TensorTypeTraits{"Q8_K", 256, 292, false};
    case TensorType::I8: return TensorTypeTraits{"I8", 1, 1, false};
    case TensorType::I16: return TensorTypeTraits{"I16", 1, 2, false};
    case TensorType::I32: return TensorTypeTraits{"I32", 1, 4, false};
    case TensorType::I64: return TensorTypeTraits{"I64", 1, 8, false};
    case TensorType::F64: return TensorTypeTraits{"F64", 1, 8, false};
  }
  return std::nullopt;
}

std::string tensor_type_name(uint32_t type_id) {
  auto t = tensor_type_traits(type_id);
  return t ? std::string(t->name) : "type#" + std::to_string(type_id);
}

size_t row_size_bytes(TensorType type, int64_t n_elems) {
  auto t = tensor_type_traits(static_cast<uint32_t>(type));
  assert(t && n_elems % t->block_elems == 0);
  return static_cast<size_t>(n_elems / t->block_elems) * t->block_size_bytes;
}

}  // namespace chorus
