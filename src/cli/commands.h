// One function per command: takes the arguments after the command name,
// returns the process exit code (exit_codes.h).
#ifndef ZEROFOLD_CLI_COMMANDS_H_
#define ZEROFOLD_CLI_COMMANDS_H_

#include <string>
#include <vector>

namespace zerofold::cli {

int RunInspect(const std::vector<std::string>& args);
int RunScan(const std::vector<std::string>& args);
int RunShrink(const std::vector<std::string>& args);
int RunConvert(const std::vector<std::string>& args);
int RunDiff(const std::vector<std::string>& args);
int RunMerge(const std::vector<std::string>& args);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_COMMANDS_H_
