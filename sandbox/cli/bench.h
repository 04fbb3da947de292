/* mini-sandbox bench (see bench.c). */
#ifndef MINI_SANDBOX_BENCH_H
#define MINI_SANDBOX_BENCH_H

int mini_cli_bench(int argc, char **argv);

#endif
