package io.kvraft.benchmark;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The CPU time the JIT compiler threads of some JVMs used (the benchmark's own and the local cluster's servers), against
 * all their threads', read from Linux's {@code /proc}: a warm-up is not over while the compilers still take a fair share
 * of the CPU, however flat the throughput looks for a while. Written by hand: no JMX bean gives another JVM's compiler time without an agent in it, and
 * {@code /proc/PID/task/TID/comm} names HotSpot's compiler threads ("C1 CompilerThre", "C2 CompilerThre").
 * <p>
 * Compiler threads come and go (HotSpot starts and stops them with the load), so each thread's time is counted by its
 * growth since the last sample: a thread that ended keeps what was seen of it. Not thread-safe: one thread samples.
 */
final class CompilerActivity {

    /** Cumulative CPU ticks (USER_HZ) of the compiler threads and of all threads of the processes. */
    record Sample(long compilerTicks, long totalTicks) {
    }

    private final List<Path> procs;
    /** Each compiler thread's ticks when last seen, by its task directory (its key: a task known to be one). */
    private final Map<Path, Long> lastTicks = new HashMap<>();
    /** The task directories known not to be compiler threads: their comm is read once. */
    private final Set<Path> others = new HashSet<>();
    private long compilerTicks;

    /** @param procRoot {@code /proc}, or a directory laid out like it (tests) */
    CompilerActivity(Path procRoot, List<Long> pids) {
        this.procs = pids.stream().map(p -> procRoot.resolve(Long.toString(p))).toList();
    }

    /** This JVM and {@code serverPids}, or null when {@code /proc} cannot be read (not Linux). */
    static CompilerActivity of(List<Long> serverPids) {
        Path proc = Path.of("/proc");
        if (!Files.isReadable(proc.resolve("self/task"))) {
            return null;
        }
        List<Long> pids = new java.util.ArrayList<>(serverPids);
        pids.add(0, ProcessHandle.current().pid());
        return new CompilerActivity(proc, pids);
    }

    /** The processes' compiler and total CPU so far; processes that ended count for nothing from then on. */
    Sample sample() {
        long total = 0;
        for (Path proc : procs) {
            Long t = ticks(proc.resolve("stat"));
            if (t == null) {
                continue;
            }
            total += t;
            try (DirectoryStream<Path> tasks = Files.newDirectoryStream(proc.resolve("task"))) {
                for (Path task : tasks) {
                    if (others.contains(task) || !lastTicks.containsKey(task) && !isCompiler(task)) {
                        others.add(task);
                        continue;
                    }
                    Long now = ticks(task.resolve("stat"));
                    if (now != null) {
                        Long before = lastTicks.put(task, now);
                        compilerTicks += Math.max(0, now - (before == null ? 0 : before));
                    }
                }
            } catch (IOException | RuntimeException gone) {
                // the process ended between the reads
            }
        }
        return new Sample(compilerTicks, total);
    }

    private static boolean isCompiler(Path task) {
        try {
            String comm = Files.readString(task.resolve("comm")).trim();
            return comm.startsWith("C1 CompilerThre") || comm.startsWith("C2 CompilerThre");
        } catch (IOException | RuntimeException gone) {
            return false;
        }
    }

    /** utime + stime of a {@code stat} file (fields 14 and 15; the name in parentheses may hold spaces), or null. */
    static Long ticks(Path stat) {
        try {
            String s = Files.readString(stat);
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            return Long.parseLong(f[11]) + Long.parseLong(f[12]);
        } catch (IOException | RuntimeException gone) {
            return null;
        }
    }
}
