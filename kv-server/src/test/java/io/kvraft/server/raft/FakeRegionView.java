package io.kvraft.server.raft;

/** A replica's own state for {@link QuietRegions.Replica}, set by the test. */
final class FakeRegionView implements QuietRegions.View {

    boolean leader;
    long term;
    String leaderHint;
    boolean changing;

    FakeRegionView(long term, String leaderHint) {
        this.term = term;
        this.leaderHint = leaderHint;
    }

    @Override
    public boolean isLeader() {
        return leader;
    }

    @Override
    public long term() {
        return term;
    }

    @Override
    public String leaderHint() {
        return leaderHint;
    }

    @Override
    public boolean changing() {
        return changing;
    }
}
