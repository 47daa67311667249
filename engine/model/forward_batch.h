#pragma once
// The rows one forward pass computes: a prefill chunk is several rows of one sequence, a
// decode step one row for each of M sequences; a mix is allowed. Row r is token tokens[r]
// at position positions[r] of sequence seq_of_row[r].
#include <cstdint>
#include <span>
#include <vector>

namespace chorus {

struct ForwardBatch {
  std::vector<int32_t> tokens;                        // [n_rows]
  std::vector<int32_t> positions;                     // [n_rows]
  std::vector<int32_t> seq_of_row;                    // [n_rows] index into block_tables
  std::vector<std::span<const int32_t>> block_tables; // [n_seqs]

  int64_t n_rows() const { return static_cast<int64_t>(tokens.size()); }
  void add_row(int32_t token, int32_t pos, int32_t seq) {
    tokens.push_back(token);
    positions.push_back(pos);
    seq_of_row.push_back(seq);
  }
};

}  // namespace chorus
