#ifndef OFFLINESTORE_CMICROHTTPD_SHIM_H
#define OFFLINESTORE_CMICROHTTPD_SHIM_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

// Swift cannot call C variadic functions. MHD_start_daemon takes its options
// as a variadic list, MHD_get_daemon_info and MHD_get_connection_info take a
// variadic tail, and MHD's logger receives a va_list. These typed wrappers are
// the only way the Swift layer reaches those entry points.
//
// Manual: https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html
// (sections "microhttpd-init" for the options, "microhttpd-info" for the info
// queries). Debian 12 ships 0.9.75.

/// Where MHD's error log goes: each message is formatted here and handed to
/// `log` with `context`. The struct must outlive the daemon.
struct cmhd_logger {
    void (*log)(void *context, const char *message);
    void *context;
};

/// An MHD_LogCallback that formats the message and forwards it to a cmhd_logger.
static inline void cmhd_log_trampoline(void *cls, const char *format, va_list arguments) {
    const struct cmhd_logger *logger = (const struct cmhd_logger *)cls;
    char message[1024];
    int length = vsnprintf(message, sizeof message, format, arguments);
    if (length < 0) {
        return;
    }
    // MHD's messages end with a newline; the Swift side wants plain lines.
    size_t end = strlen(message);
    while (end > 0 && (message[end - 1] == '\n' || message[end - 1] == '\r')) {
        message[--end] = '\0';
    }
    logger->log(logger->context, message);
}

/// An MHD_LogCallback that drops the message.
static inline void cmhd_log_discard(void *cls, const char *format, va_list arguments) {
    (void)cls;
    (void)format;
    (void)arguments;
}

/// Where the request line's target goes as soon as it is read: `received` is
/// called with `context` and the target as sent (path and query, nothing
/// percent-decoded), and its result becomes the request's `*req_cls`.
struct cmhd_target_sink {
    void *(*received)(void *context, const char *target, struct MHD_Connection *connection);
    void *context;
};

/// An MHD_OPTION_URI_LOG_CALLBACK that hands the target to a cmhd_target_sink
/// and then empties the query string in place.
///
/// 0.9.75 parses query arguments into the connection's memory pool right after
/// this callback (connection.c, parse_initial_message_line), and a query of a
/// thousand arguments that does not fit leaves the connection with no answer
/// until it times out. The sink has the whole target already, so MHD is given
/// an empty query instead: it was located before this callback, and an empty
/// string yields no argument. The buffer is the connection's own read buffer,
/// writable, which MHD passes as const only to say it is not the callback's to
/// change; nothing of MHD reads the query's text after this but the parser.
static inline void *cmhd_target_trampoline(void *cls, const char *target, struct MHD_Connection *connection) {
    const struct cmhd_target_sink *sink = (const struct cmhd_target_sink *)cls;
    void *request = sink->received(sink->context, target, connection);
    char *query = strchr((char *)target, '?');
    if (query != NULL) {
        memset(query + 1, 0, strlen(query + 1));
    }
    return request;
}

/// An MHD_UnescapeCallback that leaves the text as sent: the request's path
/// reaches the handler percent-encoded, so `/a%2Fb` is one segment, never two.
static inline size_t cmhd_unescape_nothing(void *cls, struct MHD_Connection *connection, char *text) {
    (void)cls;
    (void)connection;
    return strlen(text);
}

/// Everything MHD_start_daemon is given, as typed fields.
///
/// Every pointer must stay valid until MHD_stop_daemon has returned: MHD keeps
/// the callbacks' contexts, and with TLS the key and certificate PEM text.
struct cmhd_daemon_settings {
    /// MHD_USE_* flags. MHD_USE_TLS and MHD_USE_ERROR_LOG are added by
    /// cmhd_start_daemon when a key/certificate or a logger is given.
    unsigned int flags;
    /// The address to bind, port included (MHD_OPTION_SOCK_ADDR): a
    /// sockaddr_in, or a sockaddr_in6 with MHD_USE_IPv6 in flags.
    const struct sockaddr *address;
    /// MHD_OPTION_THREAD_POOL_SIZE; 0 or 1 runs one internal polling thread.
    unsigned int thread_pool_size;
    /// MHD_OPTION_CONNECTION_LIMIT, over all threads.
    unsigned int connection_limit;
    /// MHD_OPTION_PER_IP_CONNECTION_LIMIT; 0 means no limit.
    unsigned int per_ip_connection_limit;
    /// MHD_OPTION_CONNECTION_MEMORY_LIMIT: the per-connection pool that holds
    /// the request line, headers and read buffer.
    size_t connection_memory_limit;
    /// MHD_OPTION_CONNECTION_TIMEOUT in seconds of inactivity; 0 means none.
    unsigned int connection_timeout_seconds;
    MHD_AccessHandlerCallback access_handler;
    void *access_handler_context;
    /// MHD_OPTION_NOTIFY_COMPLETED.
    MHD_RequestCompletedCallback request_completed;
    void *request_completed_context;
    /// MHD_OPTION_NOTIFY_CONNECTION.
    MHD_NotifyConnectionCallback connection_notify;
    void *connection_notify_context;
    /// MHD_OPTION_URI_LOG_CALLBACK through cmhd_target_trampoline (required),
    /// with MHD_OPTION_UNESCAPE_CALLBACK set to cmhd_unescape_nothing.
    const struct cmhd_target_sink *target_sink;
    /// MHD_OPTION_LISTEN_BACKLOG_SIZE; 0 keeps MHD's default.
    unsigned int listen_backlog;
    /// MHD_OPTION_EXTERNAL_LOGGER through cmhd_log_trampoline; NULL discards
    /// MHD's messages (they never reach stderr).
    const struct cmhd_logger *logger;
    /// MHD_OPTION_HTTPS_MEM_KEY / MHD_OPTION_HTTPS_MEM_CERT (PEM text); both
    /// NULL for plain HTTP.
    const char *tls_key_pem;
    const char *tls_cert_pem;
};

/// MHD_start_daemon with the options of `settings`: the logger, then the rest
/// as one MHD_OPTION_ARRAY so the optional ones (TLS) need no second call.
/// Returns NULL when the daemon cannot start (the logger, if any, says why).
static inline struct MHD_Daemon *cmhd_start_daemon(const struct cmhd_daemon_settings *settings) {
    struct MHD_OptionItem options[20];
    unsigned int count = 0;
    unsigned int flags = settings->flags;

    // Integer options carry their value in `value`; single-pointer options in
    // `ptr_value`; callback + context pairs as (value, ptr_value).
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)settings->address};
    if (settings->thread_pool_size > 1) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE,
                                                   (intptr_t)settings->thread_pool_size, NULL};
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
                                               (intptr_t)settings->connection_limit, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                               (intptr_t)settings->per_ip_connection_limit, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                               (intptr_t)settings->connection_memory_limit, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                               (intptr_t)settings->connection_timeout_seconds, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED,
                                               (intptr_t)settings->request_completed,
                                               settings->request_completed_context};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION,
                                               (intptr_t)settings->connection_notify,
                                               settings->connection_notify_context};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)cmhd_target_trampoline,
                                               (void *)settings->target_sink};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)cmhd_unescape_nothing, NULL};
    if (settings->listen_backlog > 0) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE,
                                                   (intptr_t)settings->listen_backlog, NULL};
    }
    if (settings->tls_key_pem != NULL && settings->tls_cert_pem != NULL) {
        flags |= MHD_USE_TLS;
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)settings->tls_key_pem};
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)settings->tls_cert_pem};
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    // The logger must be the first option: 0.9.75 otherwise prints a warning
    // on stderr through its default logger (an MHD_OPTION_ARRAY holding it
    // first does not count). Without a logger, messages are discarded.
    MHD_LogCallback log = cmhd_log_discard;
    void *log_context = NULL;
    if (settings->logger != NULL) {
        flags |= MHD_USE_ERROR_LOG;
        log = cmhd_log_trampoline;
        log_context = (void *)settings->logger;
    }

    // The port argument is ignored: MHD_OPTION_SOCK_ADDR carries it.
    return MHD_start_daemon(flags, 0, NULL, NULL, settings->access_handler, settings->access_handler_context,
                            MHD_OPTION_EXTERNAL_LOGGER, log, log_context, MHD_OPTION_ARRAY, options,
                            MHD_OPTION_END);
}

/// The port the daemon is bound to (MHD_DAEMON_INFO_BIND_PORT), which is the
/// ephemeral port the kernel chose when the address asked for port 0.
/// Returns 0 when MHD cannot tell.
static inline uint16_t cmhd_daemon_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The client's IP address (MHD_CONNECTION_INFO_CLIENT_ADDRESS) as text in
/// `buffer` ("127.0.0.1", "::1"). Returns 0 on success, -1 when unknown.
static inline int cmhd_connection_client_address(struct MHD_Connection *connection, char *buffer,
                                                 socklen_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) {
        return -1;
    }
    const struct sockaddr *address = info->client_addr;
    const void *raw;
    if (address->sa_family == AF_INET) {
        raw = &((const struct sockaddr_in *)(const void *)address)->sin_addr;
    } else if (address->sa_family == AF_INET6) {
        raw = &((const struct sockaddr_in6 *)(const void *)address)->sin6_addr;
    } else {
        return -1;
    }
    return inet_ntop(address->sa_family, raw, buffer, size) == NULL ? -1 : 0;
}

/// The connection's socket context (MHD_CONNECTION_INFO_SOCKET_CONTEXT): what
/// the MHD_CONNECTION_NOTIFY_STARTED callback stored, or NULL.
static inline void *cmhd_connection_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/// The connection's socket (MHD_CONNECTION_INFO_CONNECTION_FD), or -1.
static inline int cmhd_connection_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

#endif
