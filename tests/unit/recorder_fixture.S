// Functions for recorder_stubs_test: position-independent (they are copied to another
// address and run there), each starting with five bytes of whole, position-
// independent instructions (push rbp; mov rbp, rsp; push rbx), the window the test's
// entry patch displaces.
        .text

        .globl ft_fixture_add3
        .type ft_fixture_add3, @function
ft_fixture_add3:                        // long add3(long a, long b, long c)
        push %rbp
        mov %rsp, %rbp
        push %rbx
        lea (%rdi,%rsi), %rax
        add %rdx, %rax
        pop %rbx
        pop %rbp
        ret
        .globl ft_fixture_add3_end
ft_fixture_add3_end:
        .size ft_fixture_add3, .-ft_fixture_add3

        .globl ft_fixture_outer
        .type ft_fixture_outer, @function
ft_fixture_outer:                       // long outer(long (*f)(long, long, long), long a, long b, long c)
        push %rbp                       //   { return f(a, b, c) + 1; }
        mov %rsp, %rbp
        push %rbx
        sub $8, %rsp
        mov %rdi, %rax
        mov %rsi, %rdi
        mov %rdx, %rsi
        mov %rcx, %rdx
        call *%rax
        add $1, %rax
        add $8, %rsp
        pop %rbx
        pop %rbp
        ret
        .globl ft_fixture_outer_end
ft_fixture_outer_end:
        .size ft_fixture_outer, .-ft_fixture_outer

        .section .note.GNU-stack,"",@progbits

// For recorder_unwind_test:
//   void ft_fixture_with_entry_state(void (*fn)(uint64_t sp, uint64_t bp, void* arg), void* arg)
// calls fn with the stack pointer and rbp as they are at its own entry ([sp]: the
// return address into its caller), while that frame is still live.
        .text
        .globl ft_fixture_with_entry_state
        .type ft_fixture_with_entry_state, @function
ft_fixture_with_entry_state:
        mov %rdi, %rax
        mov %rsi, %rdx
        mov %rsp, %rdi
        mov %rbp, %rsi
        sub $8, %rsp
        call *%rax
        add $8, %rsp
        ret
        .size ft_fixture_with_entry_state, .-ft_fixture_with_entry_state
        .section .note.GNU-stack,"",@progbits
