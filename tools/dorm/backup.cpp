#include "backup.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "dorm/runtime/log.hpp"
#include "dorm/runtime/store_inspector.hpp"
#include "dorm/storage/backup.hpp"
#include "version.hpp"

namespace dorm::tools {
namespace {

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

std::string generation_text(const std::optional<std::uint64_t>& generation) {
  return generation ? std::to_string(*generation) : std::string("none");
}

}  // namespace

int backup(const BackupCommandOptions& options) {
  auto uri = storage::parse_storage_uri(options.storage);
  if (!uri) {
    log::error("backup_failed", {{"storage", options.storage}, {"error", uri.error().message}});
    return 1;
  }
  storage::BackupOptions how;
  how.dorm_version = kVersion;
  how.read_generation = [](storage::Backend& copy) -> Result<std::optional<std::uint64_t>> {
    auto inspector = StoreInspector::open(copy);
    if (!inspector) return std::move(inspector).error();
    auto state = inspector->runtime_state();
    if (!state) return std::move(state).error();
    return state->generation;
  };
  auto made = storage::create_backup(*uri, options.to, how);
  if (!made) {
    log::error("backup_failed",
               {{"storage", options.storage}, {"to", options.to}, {"error", made.error().message}});
    return 1;
  }
  log::info("backup_done", {{"storage", made->source},
                            {"to", options.to},
                            {"keys", made->contents.keys},
                            {"bytes", made->contents.bytes},
                            {"generation", generation_text(made->generation)}});
  if (options.json) {
    print(made->to_json());
  } else {
    print("backup of " + made->source + " in " + options.to + ": " +
          std::to_string(made->contents.keys) + " keys, " + std::to_string(made->contents.bytes) +
          " bytes, generation " + generation_text(made->generation) + "\n");
  }
  return 0;
}

int restore(const RestoreCommandOptions& options) {
  auto uri = storage::parse_storage_uri(options.storage);
  if (!uri) {
    log::error("restore_failed", {{"storage", options.storage}, {"error", uri.error().message}});
    return 1;
  }
  storage::RestoreOptions how;
  how.force = options.force;
  auto restored = storage::restore_backup(options.from, *uri, how);
  if (!restored) {
    log::error("restore_failed", {{"from", options.from},
                                  {"storage", options.storage},
                                  {"error", restored.error().message}});
    return 1;
  }
  log::info("restore_done", {{"from", options.from},
                             {"storage", options.storage},
                             {"keys", restored->keys},
                             {"bytes", restored->bytes}});
  print("restored " + options.from + " into " + options.storage + ": " +
        std::to_string(restored->keys) + " keys, " + std::to_string(restored->bytes) + " bytes\n");
  return 0;
}

CommandEntry add_backup_command(CLI::App& app) {
  auto options = std::make_shared<BackupCommandOptions>();
  auto* cmd = app.add_subcommand(
      "backup",
      "Copy a store into a new directory, consistently, while dorm serve runs on it "
      "(docs/operations.md#backups)");
  // --store: the spelling of the issue that asked for it; --storage: that of every other
  // subcommand.
  cmd->add_option("--storage,--store", options->storage, "Storage URI of the store to copy")
      ->required();
  cmd->add_option("--to", options->to, "The backup directory (made if missing; must be empty)")
      ->required();
  cmd->add_flag("--json", options->json, "Print the backup's manifest (JSON) instead of a line");
  return {cmd, [options] { return backup(*options); }};
}

CommandEntry add_restore_command(CLI::App& app) {
  auto options = std::make_shared<RestoreCommandOptions>();
  auto* cmd = app.add_subcommand("restore",
                                 "Put a backup made by dorm backup into a store no server is using "
                                 "(docs/operations.md#backups)");
  cmd->add_option("--from", options->from, "The backup directory")->required();
  cmd->add_option("--storage,--store", options->storage,
                  "Storage URI of the store to restore into (made if missing)")
      ->required();
  cmd->add_flag("--force", options->force,
                "Replace what the store holds (without it a store that holds anything is refused)");
  return {cmd, [options] { return restore(*options); }};
}

}  // namespace dorm::tools
