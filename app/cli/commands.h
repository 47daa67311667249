#pragma once
// Sub-commands of chorus-cli, one file each (cmd_<name>.cpp). Each returns the exit code.
namespace chorus::cli {

int cmd_info(int argc, char** argv);
int cmd_logits(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_template(int argc, char** argv);

}  // namespace chorus::cli
