// The timer workloads of bench/timer_bench.cc on Netty's
// io.netty.util.HashedWheelTimer, the timer wheelrpc's design follows (system
// "netty_hashedwheeltimer" in bench/compare_timer.sh). Same JSON fields,
// splitmix64 delays (seed 42) and measurement as wheelrpc's timer_bench and
// bench/peers/asio_timer_bench.cc. One JSON line per run on stdout; exit
// status 0 when the run's self-check (field "check") passed, 1 when it
// failed, 2 on a usage error.
//
//   bench/peers/netty_timer_bench.sh churn P K         (tick 10 ms, 512 ticks per wheel)
//   bench/peers/netty_timer_bench.sh accuracy N        (tick 1 ms, 1024 ticks per wheel)
//   bench/peers/netty_timer_bench.sh idle TICK_MS SECONDS  (512 ticks per wheel)
//
// (netty_timer_bench.sh runs this class on the JVM settings of every run.)
//
// churn: the memory of the P-timeout fill is measured first, in a fresh JVM
// (RSS, and the live heap after a full GC before and after: the retained
// size); then an unreported pass on a second timer (P = 10 000, 1 000 000
// pairs) lets the JIT compile the loop; then K pairs on the first timer.
// Netty moves new timeouts into its wheel and unlinks cancelled ones on its
// worker thread, once per tick, so `ns_per_pair` is the producer's cost and
// `cpu_ns_per_pair` (the whole process, from the loop's start to 3 ticks after
// its end) the full cost: worker, GC and JIT included. Netty 4.1.48's
// pendingTimeouts() can count a cancel twice, so "still pending" is the size
// of the set that stop() returns; the counter is reported as
// `netty_pending_counter`.
//
// accuracy: an unreported pass of up to 20 000 timeouts on another timer
// first (JIT), then N timeouts 10-1000 ms away scheduled as fast as possible.
//
// idle: one timeout 1 h away; after 0.5 s to settle, SECONDS of nothing: CPU
// and voluntary context switches of the process and of the worker thread.

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.TimerTask;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

public final class NettyTimerBench {
    private static final String SYSTEM = "netty_hashedwheeltimer";
    /** The worker's name, and so its /proc/self/task/TID/comm (under 16 characters). */
    private static final String WORKER = "netty-wheel";

    private NettyTimerBench() {}

    // ---- the delay generator -----------------------------------------------------

    /** splitmix64, the sequence of bench/peers/peer_util.h's SplitMix64. */
    private static final class SplitMix64 {
        private long state;

        SplitMix64(long seed) { state = seed; }

        long next() {
            long z = (state += 0x9E3779B97F4A7C15L);
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }

        /** Uniform in [lo, hi], both included; unsigned modulo, as in C++. */
        long uniform(long lo, long hi) { return lo + Long.remainderUnsigned(next(), hi - lo + 1); }
    }

    // ---- measurements ------------------------------------------------------------

    /** Creates the wheel's worker thread (a daemon) under a name we can find in /proc. */
    private static final class NamedWorker implements ThreadFactory {
        volatile Thread thread;

        @Override
        public Thread newThread(Runnable r) {
            Thread t = new Thread(r, WORKER);
            t.setDaemon(true);
            thread = t;
            return t;
        }
    }

    /** user + sys CPU ns of the whole JVM, every thread (10 ms resolution on Linux). */
    private static long processCpuNs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static long threadCpuNs(Thread t) {
        return ManagementFactory.getThreadMXBean().getThreadCpuTime(t.getId());
    }

    /** The number after "key:" in a /proc status file; 0 when absent (a thread that just ended). */
    private static long statusField(Path status, String key) {
        try {
            for (String line : Files.readAllLines(status)) {
                if (line.startsWith(key + ":")) {
                    return Long.parseLong(line.substring(key.length() + 1).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // gone
        }
        return 0;
    }

    private static long rssBytes() { return statusField(Path.of("/proc/self/status"), "VmRSS") * 1024; }

    /** Voluntary context switches summed over this process's threads, or only those named `name`. */
    private static long voluntaryCtxsw(String name) throws IOException {
        long total = 0;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path task : tasks) {
                if (name != null) {
                    String comm;
                    try {
                        comm = Files.readString(task.resolve("comm")).trim();
                    } catch (IOException e) {
                        continue;
                    }
                    if (!comm.equals(name)) continue;
                }
                total += statusField(task.resolve("status"), "voluntary_ctxt_switches");
            }
        }
        return total;
    }

    /** Live heap bytes after a full collection. */
    private static long liveHeapBytes() throws InterruptedException {
        System.gc();
        Thread.sleep(100);
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private static long nearestRank(long[] sorted, double q) {
        if (sorted.length == 0) return 0;
        int rank = (int) Math.ceil(q * sorted.length);
        return sorted[Math.min(sorted.length, Math.max(rank, 1)) - 1];
    }

    // ---- output ------------------------------------------------------------------

    /** One JSON object on one line: strings quoted, doubles with 3 decimals, the rest as is. */
    private static final class JsonLine {
        private final StringBuilder text = new StringBuilder("{");

        JsonLine(String workload) {
            put("system", SYSTEM);
            put("version", HashedWheelTimer.class.getPackage().getImplementationVersion());
            put("workload", workload);
        }

        JsonLine put(String key, Object value) {
            if (text.length() > 1) text.append(',');
            text.append('"').append(key).append("\":");
            if (value == null) {
                text.append("null");
            } else if (value instanceof String) {
                text.append('"').append(((String) value).replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
            } else if (value instanceof Double) {
                double d = (Double) value;
                text.append(Double.isFinite(d) ? String.format(Locale.ROOT, "%.3f", d) : "null");
            } else {
                text.append(value);
            }
            return this;
        }

        void print() {
            System.out.println(text.append('}'));
            System.out.flush();
        }
    }

    /** The "check" field: "ok", or "FAILED: " and what was wrong. */
    private static final class Check {
        private final List<String> failures = new ArrayList<>();

        void expect(boolean ok, String what) { if (!ok) failures.add(what); }

        boolean ok() { return failures.isEmpty(); }

        String text() { return ok() ? "ok" : "FAILED: " + String.join("; ", failures); }
    }

    // ---- churn -------------------------------------------------------------------

    private static final int CHURN_TICK_MS = 10;
    private static final int CHURN_WHEEL = 512;

    private static HashedWheelTimer churnTimer() {
        return new HashedWheelTimer(new NamedWorker(), CHURN_TICK_MS, TimeUnit.MILLISECONDS, CHURN_WHEEL);
    }

    /** One churn timeout, 30-60 s away (µs granularity). */
    private static Timeout schedule(HashedWheelTimer timer, TimerTask task, SplitMix64 rng) {
        return timer.newTimeout(task, rng.uniform(30_000_000L, 60_000_000L), TimeUnit.MICROSECONDS);
    }

    /** Fills ring[0 .. P-1] (ring.length = P + 1): the last slot stays free. */
    private static void fill(HashedWheelTimer timer, Timeout[] ring, TimerTask task, SplitMix64 rng) {
        for (int i = 0; i + 1 < ring.length; i++) ring[i] = schedule(timer, task, rng);
    }

    /** `pairs` times: schedule into the free slot, cancel the oldest. Returns the successful cancels. */
    private static long churnLoop(HashedWheelTimer timer, Timeout[] ring, TimerTask task, SplitMix64 rng, int pairs) {
        final int p = ring.length - 1;
        int oldest = 0;  // the free slot is the one before it (cyclically)
        long cancelled = 0;
        for (int i = 0; i < pairs; i++) {
            ring[oldest == 0 ? p : oldest - 1] = schedule(timer, task, rng);
            if (ring[oldest].cancel()) cancelled++;
            oldest = oldest == p ? 0 : oldest + 1;
        }
        return cancelled;
    }

    private static boolean churn(int p, int k) throws Exception {
        LongAdder fired = new LongAdder();
        TimerTask task = timeout -> fired.increment();  // one task object for every timeout
        SplitMix64 rng = new SplitMix64(42);
        HashedWheelTimer timer = churnTimer();
        Timeout[] ring = new Timeout[p + 1];  // the benchmark's own array: outside the window
        timer.start();

        long heap0 = liveHeapBytes();
        long rss0 = rssBytes();
        fill(timer, ring, task, rng);
        // The worker takes at most 100 000 new timeouts into the wheel per tick.
        Thread.sleep(Math.max(200L, 3L * CHURN_TICK_MS * (p / 100_000 + 1)));
        long rss1 = rssBytes();
        long heap1 = liveHeapBytes();

        // JIT warm-up on its own timer and generator: the measured loop then
        // draws the same delays as the C++ benches.
        HashedWheelTimer warm = churnTimer();
        Timeout[] warmRing = new Timeout[10_001];
        SplitMix64 warmRng = new SplitMix64(7);
        fill(warm, warmRing, task, warmRng);
        churnLoop(warm, warmRing, task, warmRng, 1_000_000);
        warm.stop();

        long c0 = processCpuNs();
        long t0 = System.nanoTime();
        long cancelled = churnLoop(timer, ring, task, rng, k);
        long t1 = System.nanoTime();
        Thread.sleep(3L * CHURN_TICK_MS);  // the worker applies the last cancels within a tick
        long c1 = processCpuNs();
        long counter = timer.pendingTimeouts();
        int pendingAtEnd = timer.stop().size();
        long firedCount = fired.sum();

        Check check = new Check();
        check.expect(cancelled == k, "cancelled != iterations");
        check.expect(firedCount == 0, "a timeout fired");
        check.expect(pendingAtEnd == p, "stop() did not return exactly P timeouts");

        double ns = (double) (t1 - t0) / k;
        new JsonLine("churn")
                .put("tick_ms", CHURN_TICK_MS).put("ticks_per_wheel", CHURN_WHEEL)
                .put("pending", p).put("iterations", k)
                .put("ns_per_pair", ns).put("pairs_per_s", Math.round(1e9 / ns))
                .put("cpu_s", (c1 - c0) / 1e9).put("cpu_ns_per_pair", (c1 - c0) / (double) k)
                .put("bytes_per_pending", (rss1 - rss0) / (double) p)
                .put("heap_bytes_per_pending", (heap1 - heap0) / (double) p)
                .put("cancelled", cancelled).put("fired", firedCount)
                .put("pending_at_end", pendingAtEnd).put("netty_pending_counter", counter)
                .put("check", check.text())
                .print();
        return check.ok();
    }

    // ---- accuracy ----------------------------------------------------------------

    private static final int ACCURACY_TICK_MS = 1;
    private static final int ACCURACY_WHEEL = 1024;

    /** N timeouts; prints the result line when `report`. */
    private static boolean accuracy(int n, boolean report) throws Exception {
        SplitMix64 rng = new SplitMix64(42);
        HashedWheelTimer timer =
                new HashedWheelTimer(new NamedWorker(), ACCURACY_TICK_MS, TimeUnit.MILLISECONDS, ACCURACY_WHEEL);
        timer.start();
        long[] deadline = new long[n];
        long[] ranAt = new long[n];
        Arrays.fill(ranAt, Long.MIN_VALUE);
        CountDownLatch all = new CountDownLatch(n);

        long c0 = processCpuNs();
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            final int slot = i;
            long delayUs = rng.uniform(10_000, 1_000_000);
            deadline[i] = System.nanoTime() + delayUs * 1000;
            timer.newTimeout(timeout -> {
                ranAt[slot] = System.nanoTime();
                all.countDown();
            }, delayUs, TimeUnit.MICROSECONDS);
        }
        long tScheduled = System.nanoTime();
        boolean allFired = all.await(20, TimeUnit.SECONDS);
        long t1 = System.nanoTime();
        long c1 = processCpuNs();
        timer.stop();  // joins the worker: ranAt is ours now
        if (!report) return true;

        long[] late = new long[n];
        int fired = 0;
        for (int i = 0; i < n; i++) {
            if (ranAt[i] != Long.MIN_VALUE) late[fired++] = ranAt[i] - deadline[i];
        }
        late = Arrays.copyOf(late, fired);
        Arrays.sort(late);
        long minLate = fired == 0 ? 0 : late[0];

        Check check = new Check();
        check.expect(allFired && fired == n, "not all timeouts fired within 20 s");
        check.expect(minLate >= 0, "a timeout fired early");
        new JsonLine("accuracy")
                .put("tick_ms", ACCURACY_TICK_MS).put("ticks_per_wheel", ACCURACY_WHEEL)
                .put("timeouts", n).put("fired", fired).put("errors", n - fired)
                .put("schedule_s", (tScheduled - t0) / 1e9).put("wall_s", (t1 - t0) / 1e9)
                .put("min_late_ms", minLate / 1e6)
                .put("p50_late_ms", nearestRank(late, 0.50) / 1e6)
                .put("p99_late_ms", nearestRank(late, 0.99) / 1e6)
                .put("p999_late_ms", nearestRank(late, 0.999) / 1e6)
                .put("max_late_ms", (fired == 0 ? 0 : late[fired - 1]) / 1e6)
                .put("cpu_s", (c1 - c0) / 1e9)
                .put("check", check.text())
                .print();
        return check.ok();
    }

    // ---- idle --------------------------------------------------------------------

    private static final int IDLE_WHEEL = 512;

    private static boolean idle(int tickMs, double seconds) throws Exception {
        NamedWorker worker = new NamedWorker();
        HashedWheelTimer timer = new HashedWheelTimer(worker, tickMs, TimeUnit.MILLISECONDS, IDLE_WHEEL);
        LongAdder fired = new LongAdder();
        Timeout timeout = timer.newTimeout(t -> fired.increment(), 1, TimeUnit.HOURS);  // starts the worker
        Thread.sleep(500);  // settle

        long c0 = processCpuNs();
        long tc0 = threadCpuNs(worker.thread);
        long v0 = voluntaryCtxsw(null);
        long tv0 = voluntaryCtxsw(WORKER);
        Thread.sleep(Math.round(seconds * 1000));
        long c1 = processCpuNs();
        long tc1 = threadCpuNs(worker.thread);
        long v1 = voluntaryCtxsw(null);
        long tv1 = voluntaryCtxsw(WORKER);

        boolean cancelled = timeout.cancel();
        timer.stop();
        Check check = new Check();
        check.expect(fired.sum() == 0, "the timeout fired");
        check.expect(cancelled, "cancel() returned false");
        new JsonLine("idle")
                .put("tick_ms", tickMs).put("ticks_per_wheel", IDLE_WHEEL).put("seconds", seconds)
                .put("cpu_s", (c1 - c0) / 1e9).put("vol_ctxsw", v1 - v0)
                .put("timer_thread_cpu_s", (tc1 - tc0) / 1e9).put("timer_thread_vol_ctxsw", tv1 - tv0)
                .put("fired", fired.sum())
                .put("check", check.text())
                .print();
        return check.ok();
    }

    // ---- command line ------------------------------------------------------------

    private static int usage() {
        System.err.println("usage: NettyTimerBench churn P K | accuracy N | idle TICK_MS SECONDS");
        return 2;
    }

    private static int run(String[] args) throws Exception {
        String workload = args.length > 0 ? args[0] : "";
        try {
            if (workload.equals("churn") && args.length == 3) {
                int p = Integer.parseInt(args[1]);
                int k = Integer.parseInt(args[2]);
                if (p < 1 || k < 1) return usage();
                return churn(p, k) ? 0 : 1;
            }
            if (workload.equals("accuracy") && args.length == 2) {
                int n = Integer.parseInt(args[1]);
                if (n < 1) return usage();
                accuracy(Math.min(n, 20_000), false);  // JIT warm-up
                return accuracy(n, true) ? 0 : 1;
            }
            if (workload.equals("idle") && args.length == 3) {
                int tickMs = Integer.parseInt(args[1]);
                double seconds = Double.parseDouble(args[2]);
                if (tickMs < 1 || !(seconds > 0) || seconds > 3600) return usage();
                return idle(tickMs, seconds) ? 0 : 1;
            }
        } catch (NumberFormatException e) {
            return usage();
        }
        return usage();
    }

    public static void main(String[] args) throws Exception {
        System.exit(run(args));
    }
}
