// chorus-cli info: what a GGUF file holds and whether Chorus can run it.
#include <cstdio>
#include <map>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "engine/gguf/gguf_reader.h"
#include "engine/model/model_config.h"
#include "engine/model/weights.h"

namespace chorus::cli {

int cmd_info(int argc, char** argv) {
  auto args = parse_args(argc, argv, 2, {"--model"}, {"--metadata"});
  if (!args) return fail("info: " + args.message());
  auto model = args->get("--model");
  if (!model) return fail("info: usage: info --model M.gguf [--metadata]");
  auto r = gguf::Reader::open(*model);
  if (!r) return fail(r.message());
  std::printf("file: %s\n", model->c_str());
  std::printf("gguf version: %u, %zu bytes, %zu tensors, %zu metadata keys\n", r->version(), r->file_size_bytes(),
              r->tensors().size(), r->metadata().size());
  std::printf("architecture: %s\n", r->get_string_or("general.architecture", "(none)").c_str());
  std::printf("name: %s\n", r->get_string_or("general.name", "(none)").c_str());
  std::map<std::string, int> type_counts;
  int64_t n_params = 0;
  for (const auto& t : r->tensors()) {
    ++type_counts[tensor_type_name(t.type_id)];
    n_params += t.n_elements();
  }
  std::printf("parameters: %lld\n", static_cast<long long>(n_params));
  std::printf("tensor types:");
  for (const auto& [name, count] : type_counts) std::printf(" %s x%d", name.c_str(), count);
  std::printf("\n");
  std::printf("chat template: %s\n", r->find("tokenizer.chat_template") ? "present" : "absent (ChatML is used)");
  std::printf("tokenizer: %s (pre: %s)\n", r->get_string_or("tokenizer.ggml.model", "(none)").c_str(),
              r->get_string_or("tokenizer.ggml.pre", "default").c_str());
  auto config = ModelConfig::from_gguf(*r);
  if (config) {
    const ModelConfig& c = *config;
    std::printf("layers: %d, embedding: %d, heads: %d (kv %d, dim %d), ffn: %d, vocab: %d, context: %d\n",
                c.n_layers, c.n_embd, c.n_heads, c.n_kv_heads, c.head_dim, c.n_ff, c.n_vocab, c.n_ctx_train);
    std::printf("rope: base %g, %d dims, %s; rms eps %g%s%s\n", c.rope_base, c.rope_dim,
                c.rope_style == RopeStyle::Neox ? "neox" : "normal", c.rms_eps, c.has_qkv_bias ? "; qkv bias" : "",
                c.tied_embeddings ? "; tied embeddings" : "");
    auto w = ModelWeights::from_gguf(*r, c);
    std::printf("runnable: %s\n", w ? "yes" : ("no: " + w.message()).c_str());
  } else if (r->find("general.architecture")) {
    std::printf("runnable: no: %s\n", config.message().c_str());
  }
  if (args->has_flag("--metadata")) {
    for (const auto& key : r->metadata_keys()) {
      std::printf("  %s = %s\n", key.c_str(), r->find(key)->to_display_string().c_str());
    }
  }
  return 0;
}

}  // namespace chorus::cli
