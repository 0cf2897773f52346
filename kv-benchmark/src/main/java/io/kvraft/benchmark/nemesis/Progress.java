package io.kvraft.benchmark.nemesis;

import java.io.PrintStream;
import java.util.Locale;

/** A line every 10 s while a nemesis runs: operations so far and the fault in force. */
final class Progress {

    private final Thread thread;
    private volatile boolean running = true;

    Progress(RegisterWorkload load, Nemesis nemesis, PrintStream log, long origin) {
        thread = new Thread(() -> {
            while (running) {
                try {
                    Thread.sleep(10_000); // report interval
                } catch (InterruptedException e) {
                    return;
                }
                log.printf(Locale.ROOT, "[%6.1f s] ops ok %,d, failed %,d, indeterminate %,d; faults so far %d, now: %s%n",
                        (System.nanoTime() - origin) / 1e9, load.ok.get(), load.failed.get(), load.unknown.get(),
                        nemesis.events.size(), nemesis.current());
            }
        }, "nemesis-progress");
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    void stop() {
        running = false;
        thread.interrupt();
    }
}
