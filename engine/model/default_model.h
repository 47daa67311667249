#pragma once
// Where scripts/fetch_model.sh installs the default model (SmolLM2-135M-Instruct, Q4_1):
// ${XDG_DATA_HOME:-$HOME/.local/share}/chorus/models/. One definition for every front end.
#include <string>

namespace chorus {

inline constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

std::string default_model_path();

}  // namespace chorus
