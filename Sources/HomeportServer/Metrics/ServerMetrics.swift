import Synchronization

/// What this process counts besides HTTP answers, for `/metrics`: sessions, rate-limit refusals,
/// mail. Process-wide, like the process's own memory: every server in the process adds to them.
enum ServerMetrics {
    /// Signed-in sessions created.
    static let sessionsCreated = Atomic<Int>(0)
    /// Sessions ended (signed out, ended by a password change or reset, a hold or a rejection).
    static let sessionsEnded = Atomic<Int>(0)
    /// Requests refused by a rate limit.
    static let rateLimitRefusals = Atomic<Int>(0)
    /// Mail handed to the relay or written to the outbox.
    static let mailSent = Atomic<Int>(0)
    /// Mail given up.
    static let mailFailed = Atomic<Int>(0)

    /// Adds `count` to `counter`.
    static func add(_ counter: borrowing Atomic<Int>, _ count: Int = 1) {
        counter.add(count, ordering: .relaxed)
    }

    /// The counters, the database pool's waits and the push outbox's rows by state (`pending`,
    /// `sending`, `failed`; when it could be read), in Prometheus's text format.
    static func render(poolWaits: Int, outbox: [(state: String, rows: Int64)]? = nil) -> String {
        let counters: [(String, String, Int)] = [
            (
                "homeport_sessions_created_total", "Signed-in sessions created.",
                sessionsCreated.load(ordering: .relaxed)
            ),
            ("homeport_sessions_ended_total", "Sessions ended.", sessionsEnded.load(ordering: .relaxed)),
            (
                "homeport_rate_limit_refusals_total", "Requests refused by a rate limit.",
                rateLimitRefusals.load(ordering: .relaxed)
            ),
            ("homeport_mail_sent_total", "Mail sent (or written to the outbox).", mailSent.load(ordering: .relaxed)),
            ("homeport_mail_failed_total", "Mail given up.", mailFailed.load(ordering: .relaxed)),
            ("homeport_database_pool_waits_total", "Requests that waited for a database connection.", poolWaits),
        ]
        var text = counters.map { name, help, value in
            "# HELP \(name) \(help)\n# TYPE \(name) counter\n\(name) \(value)\n"
        }.joined()
        if let outbox {
            text += "# HELP homeport_push_outbox Pushes in the outbox, by state (every replica's).\n"
            text += "# TYPE homeport_push_outbox gauge\n"
            for (state, rows) in outbox {
                text += "homeport_push_outbox{state=\"\(state)\"} \(rows)\n"
            }
        }
        return text
    }
}
