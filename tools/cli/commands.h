// The subcommands. Each add_* registers its flags on `app` and returns the
// function to run when that subcommand was chosen (returning the exit code).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace zl::cli {

using Command = std::function<int()>;

Command add_generate_command(CLI::App& app);
Command add_check_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_convert_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_monitor_command(CLI::App& app);
Command add_bench_command(CLI::App& app);

}  // namespace zl::cli
