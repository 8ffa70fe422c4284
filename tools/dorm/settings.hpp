// Settings of a subcommand from four places: the command line, DORM_* environment
// variables, a TOML config file, and the options' defaults — in that order of precedence.
//
// CLI11 parses the command line; everything else is applied afterwards, option by option,
// through the option's own CLI11 machinery (flag values, delimiters, transforms and checks),
// so a value from the environment or the file is converted and checked exactly as the same
// text on the command line would be. Only an option the command line left unset takes a
// value from elsewhere. Errors name where the bad value came from: `DORM_RETRY_MS: ...` or
// `dorm.toml:3: ...`.
//
// Names: an option `--lock-wait` is the key `lock-wait` (or `lock_wait`) in the file and the
// variable DORM_LOCK_WAIT. A negated flag such as `--no-reaper` keeps its name:
// `no-reaper = true` has the effect of passing `--no-reaper`. The file is one flat TOML
// table; a key that names no option is an error (with its line), as is a table, a date or
// an array for an option that takes one value. docs/operations.md, "Configuration".
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dorm/result.hpp"

namespace dorm::tools {

// Where an option's effective value came from.
enum class SettingSource { command_line, environment, file, default_value };

// Reads an environment variable; nullopt when it is unset. Tests pass their own.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (an empty variable counts as unset, as in most servers' configs).
EnvironmentLookup process_environment();

// The variable that may set `option`: DORM_ and its long name in upper case, '-' as '_'.
std::string environment_name(const CLI::Option& option);

class Settings {
 public:
  // The options of every app in `scopes` (in order; help, version and this class's own
  // options excepted) are settings. With `config_command`, that command gains
  // `--config FILE` (also DORM_CONFIG) and `--print-config`; without it, only the
  // environment applies.
  Settings(std::vector<CLI::App*> scopes, CLI::App* config_command);

  // After CLI11 parsed the command line: gives every setting the command line left unset
  // its value from the environment, else from the config file. Errors (invalid_argument)
  // name the variable or FILE:LINE and the option; not_found / io_error for a config file
  // that cannot be read.
  Result<void> apply(const EnvironmentLookup& environment);

  // Whether --print-config was given.
  bool print_requested() const { return print_config_; }

  // The effective settings as a TOML file that `--config` reads back, each line followed by
  // a comment naming its source (command line, DORM_X, FILE:LINE or default).
  std::string effective_toml() const;

 private:
  struct Setting {
    CLI::Option* option;
    std::string key;
    SettingSource source = SettingSource::default_value;
    std::string where;  // DORM_X or FILE:LINE for environment and file sources
  };

  Result<void> apply_text(Setting& setting, const std::vector<std::string>& values);

  std::vector<Setting> settings_;
  std::string config_path_;
  bool print_config_ = false;
  CLI::Option* config_option_ = nullptr;
};

}  // namespace dorm::tools
