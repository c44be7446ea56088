// A Java program for tests/integration/test_runtimes.py: threads that throw and catch
// exceptions, one thread whose exception nobody catches (its stack trace goes to
// stderr), and an exit status of its own. It prints what it did, so a traced run can
// be compared with an untraced one.
public class Workers {
  static final int THREADS = 4;
  static final int ROUNDS = 20000;

  static int work(int n) {
    if (n == 3) throw new IllegalStateException("bad " + n);
    return n * 2;
  }

  public static void main(String[] args) throws Exception {
    Thread[] threads = new Thread[THREADS];
    final long[] sums = new long[THREADS];
    final int[] caught = new int[THREADS];
    for (int t = 0; t < THREADS; t++) {
      final int k = t;
      threads[t] = new Thread(() -> {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < ROUNDS; i++) {
          try {
            sums[k] += work(i % 5);
          } catch (IllegalStateException e) {
            caught[k]++;
            sums[k] += e.getMessage().length();
          }
          if (i % 1000 == 0) sb.append(i).append(',');
        }
        sums[k] += sb.length();
      }, "worker-" + t);
      threads[t].start();
    }
    for (Thread t : threads) t.join();
    Thread failing = new Thread(() -> { throw new UnsupportedOperationException("nobody catches this"); }, "failing");
    failing.start();
    failing.join();
    long sum = 0;
    int thrown = 0;
    for (int t = 0; t < THREADS; t++) {
      sum += sums[t];
      thrown += caught[t];
    }
    System.out.println("threads " + (THREADS + 1));
    System.out.println("caught " + thrown);
    System.out.println("sum " + sum);
    System.exit(3);
  }
}
