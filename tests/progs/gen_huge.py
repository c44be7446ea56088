#!/usr/bin/env python3
"""Writes the assembly of a module with many tiny functions (for huge_main.c).

usage: gen_huge.py OUTPUT.s PREFIX COUNT

PREFIX_i (0 <= i < COUNT) returns its argument plus i; PREFIX_table is an array of
their addresses, in order, so the program can call any of them by number."""

import sys


def main():
    out, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    parts = ["\t.text\n"]
    for i in range(count):
        name = f"{prefix}_{i}"
        parts.append(f"\t.globl {name}\n\t.type {name}, @function\n{name}:\n"
                     f"\tleaq {i}(%rdi), %rax\n\tret\n\t.size {name}, .-{name}\n")
    parts.append(f'\t.section .data.rel.ro,"aw"\n\t.balign 8\n\t.globl {prefix}_table\n'
                 f"\t.type {prefix}_table, @object\n{prefix}_table:\n")
    for i in range(0, count, 8):
        parts.append("\t.quad " + ",".join(f"{prefix}_{j}" for j in range(i, min(i + 8, count))) + "\n")
    parts.append(f"\t.size {prefix}_table, .-{prefix}_table\n")
    parts.append('\t.section .note.GNU-stack,"",@progbits\n')
    with open(out, "w") as f:
        f.write("".join(parts))


if __name__ == "__main__":
    main()
