// Limits of the process that a command-line front end adjusts once at
// start. Library code never calls these (the embedding program owns its
// limits).
#ifndef ZEROFOLD_IO_PROCESS_LIMITS_H_
#define ZEROFOLD_IO_PROCESS_LIMITS_H_

namespace zerofold::io {

// Raises the soft limit on open files to the hard limit: the POSIX env
// keeps at most half the soft limit of its files open (a merge of a 2048-rank
// Distributed Checkpoint reads 2048 .distcp files), closing and reopening
// the others, so a higher limit means fewer reopens.
// Does nothing where the limit cannot be read or raised.
void RaiseOpenFileLimit();

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_PROCESS_LIMITS_H_
