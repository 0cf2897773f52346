package io.kvraft.common.config;

/** host:port, checked. */
public record HostPort(String host, int port) {

    public static HostPort parse(String s) {
        int colon = s == null ? -1 : s.lastIndexOf(':');
        if (colon <= 0 || colon == s.length() - 1) {
            throw new IllegalArgumentException("expected host:port, got '" + s + "'");
        }
        int port;
        try {
            port = Integer.parseInt(s.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("expected host:port, got '" + s + "'");
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port out of range in '" + s + "'");
        }
        return new HostPort(s.substring(0, colon), port);
    }

    @Override
    public String toString() {
        return host + ":" + port;
    }
}
