package io.kvraft.benchmark;

/** The kinds of operation the load issues; {@link #label()} names them in reports, JSON and hlog tags. */
public enum OpType {
    PUT("put"), GET("get"), SCAN("scan");

    private final String label;

    OpType(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }

    @Override
    public String toString() {
        return label;
    }
}
