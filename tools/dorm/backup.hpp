// `dorm backup` and `dorm restore`: an online copy of a store, and putting one back.
//
// Both are thin callers of storage/backup.hpp, which owns the mechanism and the backup's
// layout; this file adds what only the program knows (its version, the runtime's
// generation read from the copy), the command lines and the exit status.
// docs/operations.md#backups describes them for operators.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace dorm::tools {

struct BackupCommandOptions {
  std::string storage;  // the store to copy, a storage URI
  std::string to;       // the backup directory: new, or empty
  bool json = false;    // print the manifest instead of a line for people
};

struct RestoreCommandOptions {
  std::string from;     // a backup directory
  std::string storage;  // the store to restore into, a storage URI
  bool force = false;   // replace what the store holds
};

// Each returns the exit status: 0, or 1 with the reason logged.
int backup(const BackupCommandOptions& options);
int restore(const RestoreCommandOptions& options);

// A subcommand added to a parser, and what runs it once the command line chose it.
struct CommandEntry {
  CLI::App* command;
  std::function<int()> run;
};
CommandEntry add_backup_command(CLI::App& app);
CommandEntry add_restore_command(CLI::App& app);

}  // namespace dorm::tools
