package io.kvraft.server.region;

import com.alipay.sofa.jraft.option.RaftOptions;

/**
 * jraft's {@link RaftOptions} with the period of the read-index scanner apart from the election delay.
 *
 * <p>jraft's read-only service starts, in every group, a thread that wakes every {@code maxElectionDelayMs} (1 s by
 * default) to look for read-index requests whose applied index has come: 24 wake-ups a second on an idle node of 24
 * regions, each finding nothing, since jraft already hands those requests on when its state machine applies (the
 * scanner is a fallback). jraft takes that period from the same option as the random part of every election timeout,
 * so the option cannot simply be raised. This one answers {@code scannerPeriodMs} to the read-only service alone,
 * told by its caller on the stack (jraft asks once, when the group starts), and the configured delay to everyone else.
 * In a jraft build where another class asks for the period, and in a {@link #copy} (jraft copies no node's options),
 * the scanner keeps jraft's own period.
 */
final class ScannerPeriodRaftOptions extends RaftOptions {

    static final String READ_ONLY_SERVICE = "com.alipay.sofa.jraft.core.ReadOnlyServiceImpl";
    private static final StackWalker WALKER = StackWalker.getInstance();

    private final int scannerPeriodMs;

    ScannerPeriodRaftOptions(int scannerPeriodMs) {
        if (scannerPeriodMs <= 0) {
            throw new IllegalArgumentException("the scanner's period must be positive, got " + scannerPeriodMs);
        }
        this.scannerPeriodMs = scannerPeriodMs;
    }

    int scannerPeriodMs() {
        return scannerPeriodMs;
    }

    @Override
    public int getMaxElectionDelayMs() {
        // frame 0 is this method, frame 1 its caller
        boolean scanner = WALKER.walk(frames -> frames.skip(1).findFirst()
                .map(f -> f.getClassName().equals(READ_ONLY_SERVICE)).orElse(false));
        return scanner ? scannerPeriodMs : super.getMaxElectionDelayMs();
    }
}
