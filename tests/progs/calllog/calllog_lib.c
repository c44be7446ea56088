/* libcalllog.so for calllog.c: cl_lib_b calls cl_lib_a from inside the library. */
__attribute__((noinline)) int cl_lib_a(int x) { return x * 3; }
__attribute__((noinline)) int cl_lib_b(int x) { return cl_lib_a(x) + 1; }
