package io.kvraft.server.raft;

import com.alipay.sofa.jraft.option.RaftOptions;

/**
 * jraft's {@link RaftOptions} with the period of the read-index scanner apart from the election delay.
 *
 * <p>jraft's read-only service starts, in every group, a thread that wakes every {@code maxElectionDelayMs} (1 s by
 * default) to look for read-index requests whose applied index has come: 24 wake-ups a second on an idle node of 24
 * regions, each finding nothing, since jraft already hands those requests on when its state machine applies (the
 * scanner is a fallback). jraft takes that period from the same option as the random part of every election timeout,
 * so the option cannot simply be raised. This one answers {@code scannerPeriodMs} to the read-only service alone,
 * told by its caller on the stack (jraft asks when the group starts), and the configured delay to everyone else.
 * In a jraft build where another class asks for the period, and in a {@link #copy} (jraft copies no node's options),
 * the scanner keeps jraft's own period.
 */
public final class ScannerPeriodRaftOptions extends RaftOptions {

    static final String READ_ONLY_SERVICE = "com.alipay.sofa.jraft.core.ReadOnlyServiceImpl";

    private final int scannerPeriodMs;

    public ScannerPeriodRaftOptions(int scannerPeriodMs) {
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
        // this method, then its caller
        return JraftCallers.calledFrom(READ_ONLY_SERVICE, null, 2) ? scannerPeriodMs : super.getMaxElectionDelayMs();
    }
}
