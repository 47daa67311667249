#include "engine/model/default_model.h"

#include <cstdlib>

namespace chorus {

std::string default_model_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  const std::string base = xdg && *xdg ? std::string(xdg) : std::string(home ? home : ".") + "/.local/share";
  return base + "/chorus/models/" + kDefaultModelFile;
}

}  // namespace chorus
