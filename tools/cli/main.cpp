// zerolayer: the command-line entry point. Each subcommand lives in its own
// file (cmd_*.cpp) and registers itself here.
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"zerolayer: an LLM inference engine with no middle layer"};
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
