// zerolayer: the command-line entry point. Each subcommand lives in its own
// cmd_*.cpp and registers itself here.
#include <CLI/CLI.hpp>

#include <utility>
#include <vector>

#include "commands.h"
#include "common.h"
#include "core/fault.h"
#include "core/log.h"

int main(int argc, char** argv) {
  CLI::App app{"zerolayer: an LLM inference engine with no middle layer"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "zerolayer 0.1.0");
  std::vector<std::pair<CLI::App*, zl::cli::Command>> commands;
  auto add = [&](zl::cli::Command (*adder)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    zl::cli::Command run = adder(app);
    commands.emplace_back(app.get_subcommands({})[before], std::move(run));
  };
  add(zl::cli::add_generate_command);
  add(zl::cli::add_check_command);
  add(zl::cli::add_tokenize_command);
  add(zl::cli::add_convert_command);
  add(zl::cli::add_serve_command);
  add(zl::cli::add_monitor_command);
  add(zl::cli::add_bench_command);
  CLI11_PARSE(app, argc, argv);
  // Fault injection, for tests and the soak only (core/fault.h): loud, so
  // that no one serves with it by accident.
  zl::StatusOr<std::string> faults = zl::fault::arm_from_env();
  if (!faults.ok()) return zl::cli::report_error(faults.status());
  if (!faults->empty()) zl::log_warn("fault injection armed from ZEROLAYER_FAULTS: ", *faults);
  for (auto& [sub, run] : commands)
    if (sub->parsed()) return run();
  return 2;
}
