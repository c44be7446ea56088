// FT_DIE_AT: functracer kills itself (SIGKILL) at a chosen moment, for checking that
// an attached program outlives it there (doc/functracer.1, ENVIRONMENT; the tests of
// tests/integration/test_attach_die_at.py). The moments are those where a thread of
// the program holds state only functracer can undo:
//   syscall:N  the N-th system call functracer injects, once the thread is pointed at it;
//   trap:N     the N-th stop at one of functracer's traps it takes in, before it answers.
#pragma once

namespace ft::die_at {

enum class Moment { Syscall, Trap };

// Counts one moment of this kind; SIGKILL to functracer itself when it is the one
// FT_DIE_AT names.
void reached(Moment m);

}  // namespace ft::die_at
