// sgemm_bench calls OpenBLAS's cblas_sgemm directly from C on the shapes of
// BenchmarkSGEMM, so the purego path can be compared with a native caller.
// Usage: sgemm_bench THREADS REPS. Prints one line per shape:
//   MxNxK mean_gflops best_gflops gflops_per_cpu_second
// (CPU time is the whole process's, OpenBLAS threads included, as in the Go
// benchmark's GFLOP/s/cpu-s.)
// Built and run by run.sh; never committed as a binary.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

// Prototypes from cblas.h / OpenBLAS, declared here so that only the runtime
// library (libopenblas0-pthread) is needed to build.
enum { RowMajor = 101, NoTrans = 111, Trans = 112 };
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k,
                 float alpha, const float *a, int lda, const float *b, int ldb,
                 float beta, float *c, int ldc);
void openblas_set_num_threads(int);

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static float *randm(size_t n) {
  float *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
  return x;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  openblas_set_num_threads(threads);
  // m, n, k, transB — the same list as benchShapes in bench_test.go.
  int shapes[][4] = {{384, 1500, 384, 0}, {1024, 1024, 1024, 0}, {1500, 1536, 384, 1}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2], tb = shapes[s][3];
    float *a = randm((size_t)m * k), *b = randm((size_t)k * n), *c = randm((size_t)m * n);
    int ldb = tb ? k : n;
    cblas_sgemm(RowMajor, NoTrans, tb ? Trans : NoTrans, m, n, k, 1, a, k, b, ldb, 0, c, n);
    double flops = 2.0 * m * n * k, best = 0, total = 0, cpu0 = cpu();
    for (int r = 0; r < reps; r++) {
      double t0 = now();
      cblas_sgemm(RowMajor, NoTrans, tb ? Trans : NoTrans, m, n, k, 1, a, k, b, ldb, 0, c, n);
      double dt = now() - t0;
      total += dt;
      if (flops / dt > best) best = flops / dt;
    }
    double cpus = cpu() - cpu0;
    printf("%dx%dx%d %.2f %.2f %.2f\n", m, n, k, flops * reps / total / 1e9, best / 1e9, flops * reps / cpus / 1e9);
    free(a), free(b), free(c);
  }
  return 0;
}
