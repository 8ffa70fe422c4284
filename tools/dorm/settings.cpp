#include "settings.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>
#include <sstream>
#include <toml++/toml.h>

namespace dorm::tools {
namespace {

constexpr const char* kConfigVariable = "DORM_CONFIG";

bool is_flag(const CLI::Option& option) { return option.get_expected_max() == 0; }

// A negated flag (`!--no-reaper`) stores "false" in its variable when given; its setting
// `no-reaper = true` means "given".
bool is_negated_flag(const CLI::Option& option) {
  const auto& names = option.get_fnames();
  const auto& lnames = option.get_lnames();
  return is_flag(option) && !names.empty() && !lnames.empty() &&
         std::find(names.begin(), names.end(), lnames.front()) != names.end();
}

bool takes_many(const CLI::Option& option) { return option.get_items_expected_max() > 1; }

// One key of the config file: its values as text, and the line it is on.
struct FileEntry {
  std::vector<std::string> values;
  std::int64_t line;
  std::string spelled;  // the key as written, for messages
};
// By key, '_' spelled '-'.
using FileEntries = std::map<std::string, FileEntry>;

Error file_error(const std::string& path, std::int64_t line, const std::string& message) {
  return Error{ErrorCode::invalid_argument, path + ":" + std::to_string(line) + ": " + message};
}

std::string number_text(double value) {
  std::array<char, 64> buffer{};
  auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return ec == std::errc() ? std::string(buffer.data(), end) : std::to_string(value);
}

// A scalar TOML value as the text the command line would carry; nullopt for a table, an
// array or a date/time, which no option takes.
std::optional<std::string> scalar_text(const toml::node& node) {
  if (auto s = node.as_string()) return s->get();
  if (auto i = node.as_integer()) return std::to_string(i->get());
  if (auto f = node.as_floating_point()) return number_text(f->get());
  if (auto b = node.as_boolean()) return b->get() ? "true" : "false";
  return std::nullopt;
}

std::string type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date or time";
    default:
      return "a value";
  }
}

Result<FileEntries> read_file(const std::string& path) {
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    if (where.line == 0) {
      // No position: the file could not be opened at all.
      return Error{ErrorCode::not_found, path + ": cannot read the config file: " +
                                             std::string(e.description())};
    }
    return file_error(path, where.line, std::string(e.description()));
  }
  FileEntries entries;
  for (auto&& [key, node] : table) {
    std::int64_t line = key.source().begin.line;
    std::string spelled(key.str());
    FileEntry entry{{}, line, spelled};
    if (auto array = node.as_array()) {
      for (const auto& item : *array) {
        auto text = scalar_text(item);
        if (!text) {
          return file_error(path, line,
                            "'" + spelled + "' holds " + type_name(item) +
                                " inside its array; only strings, numbers and booleans are "
                                "settings");
        }
        entry.values.push_back(*text);
      }
    } else if (auto text = scalar_text(node)) {
      entry.values.push_back(*text);
    } else {
      return file_error(path, line,
                        "'" + spelled + "' is " + type_name(node) +
                            "; settings are one flat table of strings, numbers, booleans and "
                            "arrays of them");
    }
    std::string normal(spelled);
    std::replace(normal.begin(), normal.end(), '_', '-');
    auto [it, inserted] = entries.emplace(normal, std::move(entry));
    if (!inserted) {
      return file_error(path, line,
                        "'" + spelled + "' sets the same option as '" + it->second.spelled +
                            "' on line " + std::to_string(it->second.line));
    }
  }
  return entries;
}

// Every key of the file must name a setting before any value applies.
Result<void> check_keys(const std::string& path, const FileEntries& entries,
                        const std::vector<std::string>& keys) {
  for (const auto& [normal, entry] : entries) {
    bool known = std::find(keys.begin(), keys.end(), normal) != keys.end();
    if (!known) {
      std::string hint = normal == "config" || normal == "print-config"
                             ? " (a config file cannot name another one, nor print itself)"
                             : " (dorm serve --help lists the options; a key is an option's "
                               "long name without the dashes)";
      return file_error(path, entry.line, "unknown key '" + entry.spelled + "'" + hint);
    }
  }
  return {};
}

// A value for the TOML output: numbers and booleans bare, anything else a quoted string.
std::string toml_value(const std::string& text, bool flag) {
  if (flag && (text == "true" || text == "false")) return text;
  if (!text.empty()) {
    double number = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec == std::errc() && end == text.data() + text.size() && text.front() != '+' &&
        text.find_first_of("eE") == std::string::npos && text.find("inf") == std::string::npos &&
        text.find("nan") == std::string::npos) {
      return text;
    }
  }
  std::ostringstream out;
  out << toml::value<std::string>(text);
  return out.str();
}

std::string flag_setting(const CLI::Option& option, const std::string& stored) {
  // What the variable holds → whether the flag counts as given.
  if (!is_negated_flag(option)) return stored;
  if (stored == "false") return "true";
  if (stored == "true") return "false";
  return stored;
}

}  // namespace

EnvironmentLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

std::string environment_name(const CLI::Option& option) {
  std::string name = "DORM_";
  for (char c : option.get_lnames().front()) {
    name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return name;
}

Settings::Settings(std::vector<CLI::App*> scopes, CLI::App* config_command) {
  if (config_command != nullptr) {
    config_option_ = config_command->add_option(
        "--config", config_path_,
        "Read settings from this TOML file (also DORM_CONFIG); command-line flags and DORM_* "
        "variables take precedence over it (docs/operations.md)");
    config_command->add_flag("--print-config", print_config_,
                             "Print the effective settings, each with its source, as a config "
                             "file, and exit");
  }
  for (CLI::App* app : scopes) {
    for (CLI::Option* option : app->get_options()) {
      if (option->get_lnames().empty()) continue;
      const std::string& name = option->get_lnames().front();
      if (name == "help" || name == "help-all" || name == "version" || name == "config" ||
          name == "print-config") {
        continue;
      }
      settings_.push_back({option, name, SettingSource::default_value, {}});
    }
  }
}

Result<void> Settings::apply_text(Setting& setting, const std::vector<std::string>& values) {
  CLI::Option& option = *setting.option;
  auto fail = [&](const std::string& message) {
    // CLI11's own messages mostly begin with the option's name already.
    std::string name = "--" + setting.key + ": ";
    return Error{ErrorCode::invalid_argument,
                 setting.where + ": " + (message.rfind(name, 0) == 0 ? "" : name) + message};
  };
  if (values.size() > 1 && !takes_many(option)) {
    return fail("takes one value, not " + std::to_string(values.size()));
  }
  try {
    for (const auto& value : values) {
      option.add_result(is_flag(option) ? option.get_flag_value(setting.key, value) : value);
    }
    option.run_callback();
  } catch (const CLI::Error& e) {
    return fail(e.what());
  }
  return {};
}

Result<void> Settings::apply(const EnvironmentLookup& environment) {
  for (auto& setting : settings_) {
    if (setting.option->count() > 0) setting.source = SettingSource::command_line;
  }
  if (config_option_ != nullptr && config_option_->count() == 0) {
    if (auto path = environment(kConfigVariable)) config_path_ = *path;
  }
  FileEntries entries;
  if (!config_path_.empty()) {
    auto read = read_file(config_path_);
    if (!read) return read.error();
    entries = std::move(*read);
    std::vector<std::string> keys;
    for (const auto& setting : settings_) keys.push_back(setting.key);
    if (auto checked = check_keys(config_path_, entries, keys); !checked) return checked;
  }
  // What the command line left unset: from the environment, else from the file.
  for (auto& setting : settings_) {
    if (setting.source != SettingSource::default_value) continue;
    std::vector<std::string> values;
    if (auto value = environment(environment_name(*setting.option))) {
      setting.source = SettingSource::environment;
      setting.where = environment_name(*setting.option);
      values.push_back(*value);
    } else if (auto entry = entries.find(setting.key); entry != entries.end()) {
      setting.source = SettingSource::file;
      setting.where = config_path_ + ":" + std::to_string(entry->second.line);
      values = entry->second.values;
    } else {
      continue;
    }
    if (auto applied = apply_text(setting, values); !applied) return applied;
  }
  return {};
}

std::string Settings::effective_toml() const {
  std::ostringstream out;
  out << "# Effective settings: command line > DORM_* environment > config file > default.\n";
  if (!config_path_.empty()) out << "# Config file: " << config_path_ << "\n";
  for (const auto& setting : settings_) {
    const CLI::Option& option = *setting.option;
    std::vector<std::string> values = option.results();
    if (values.empty() && !option.get_default_str().empty()) {
      values.push_back(option.get_default_str());
    }
    if (values.empty() && is_flag(option)) values.push_back(is_negated_flag(option) ? "true" : "false");
    std::string source;
    switch (setting.source) {
      case SettingSource::command_line:
        source = "command line";
        break;
      case SettingSource::environment:
      case SettingSource::file:
        source = setting.where;
        break;
      case SettingSource::default_value:
        source = "default";
        break;
    }
    if (values.empty()) {
      out << "# " << setting.key << " =  (not set)\n";
      continue;
    }
    std::string text;
    if (takes_many(option)) {
      text = "[";
      for (std::size_t i = 0; i < values.size(); ++i) {
        text += (i ? ", " : "") + toml_value(values[i], false);
      }
      text += "]";
    } else {
      bool flag = is_flag(option);
      text = toml_value(flag ? flag_setting(option, values.back()) : values.back(), flag);
    }
    out << setting.key << " = " << text << "  # " << source << "\n";
  }
  return out.str();
}

}  // namespace dorm::tools
