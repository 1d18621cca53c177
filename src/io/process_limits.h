// Limits of the process that a command-line front end adjusts once at
// start. Library code never calls these (the embedding program owns its
// limits).
#ifndef ZEROFOLD_IO_PROCESS_LIMITS_H_
#define ZEROFOLD_IO_PROCESS_LIMITS_H_

namespace zerofold::io {

// Raises the soft limit on open files to the hard limit: a merge holds
// every rank file of a checkpoint open at once (a Distributed Checkpoint
// of 2048 ranks has 2048 .distcp files; the usual soft limit is 1024).
// Does nothing where the limit cannot be read or raised.
void RaiseOpenFileLimit();

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_PROCESS_LIMITS_H_
