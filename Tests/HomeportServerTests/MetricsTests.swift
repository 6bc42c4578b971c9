import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

@Suite("Prometheus metrics on an address of their own", .tags(.process))
struct MetricsTests {
    /// The value of the sample `name` (with its labels) in Prometheus text, or `nil`.
    private func sample(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
            Double($0.split(separator: " ").last ?? "")
        }
    }

    @Test("requests by group and status, latency, sessions, rate-limit refusals, mail and pool waits")
    func metrics() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let metricsPort = try RawHTTP.freePort()
        let server = try ServerProcess(serve: [
            "--database", "sqlite:" + data.file("h.sqlite"), "--outbox", data.file("outbox"), "--signup", "open",
            "--password-iterations", "1000", "--metrics-listen", "127.0.0.1:\(metricsPort)",
            "--rate-limits", "login-per-address=3/600",
        ])
        let app = AllauthAppPath.base + "/"
        func post(_ path: String, _ json: String, token: String? = nil, method: String = "POST") throws -> RawResponse {
            try RawHTTP.request(
                port: server.port, method: method, path: app + path,
                headers: [("Content-Type", "application/json")] + (token.map { [("X-Session-Token", $0)] } ?? []),
                body: json.isEmpty ? nil : Data(json.utf8))
        }
        let token = try #require(
            try post(AllauthAppPath.signup, #"{"email":"ada@example.com","password":"correct horse battery"}"#)
                .sessionToken)
        #expect(try RawHTTP.request(port: server.port, path: "/nowhere").status == 404)
        #expect(try post(AllauthAppPath.passwordResetRequest, #"{"email":"ada@example.com"}"#).status == 200)
        var statuses: [Int] = []
        for _ in 0..<4 {
            statuses.append(
                try post(AllauthAppPath.login, #"{"email":"ada@example.com","password":"wrong password!"}"#).status)
        }
        #expect(statuses.contains(429))
        #expect(try post(AllauthAppPath.session, "", token: token, method: "DELETE").status == 401)
        #expect(try RawHTTP.request(port: server.port, path: "/metrics").status == 404, "not on the API's address")
        try Self.queue(in: data.file("h.sqlite"))

        let response = try RawHTTP.request(port: metricsPort, path: "/metrics")
        #expect(response.status == 200)
        #expect(response.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = response.text
        #expect(sample(#"homeport_http_requests_total{group="/_allauth/app/v1",status="200"}"#, in: text) ?? 0 >= 2)
        #expect(sample(#"homeport_http_requests_total{group="/_allauth/app/v1",status="429"}"#, in: text) ?? 0 >= 1)
        #expect(sample(#"homeport_http_requests_total{group="other",status="404"}"#, in: text) == 2)
        let count = try #require(sample("homeport_http_request_duration_seconds_count", in: text))
        #expect(count >= 8 && sample(#"homeport_http_request_duration_seconds_bucket{le="+Inf"}"#, in: text) == count)
        #expect(sample("homeport_sessions_created_total", in: text) == 1)
        #expect(sample("homeport_sessions_ended_total", in: text) == 1)
        #expect(sample("homeport_rate_limit_refusals_total", in: text) ?? 0 >= 1)
        #expect(sample("homeport_mail_sent_total", in: text) == 1)
        #expect(sample("homeport_mail_failed_total", in: text) == 0)
        #expect(sample("homeport_database_pool_waits_total", in: text) == 0)
        #expect(sample(#"homeport_push_outbox{state="pending"}"#, in: text) == 2)
        #expect(sample(#"homeport_push_outbox{state="sending"}"#, in: text) == 0)
        #expect(sample(#"homeport_push_outbox{state="failed"}"#, in: text) == 1)
        #expect(!text.contains("tok-secret"), "no device token")
        #expect(!text.contains("ada@example.com") && !text.contains(token), "no address, no token")
        #expect(server.stop() == 0)
    }

    /// Puts two pushes waiting (an APNs one and a Web Push one) and a failed one in the outbox of
    /// the SQLite database `file`, as a server's notify would have.
    static func queue(in file: String) throws {
        let run = try ServerProcess.runProgram(
            "/usr/bin/sqlite3",
            [
                file, ".timeout 10000",
                """
                INSERT INTO push_outbox (apns_id, device_token, environment, topic, payload, priority, expiration,
                    attempts, next_attempt_at, state, created_at, provider, last_error)
                VALUES ('a1', 'tok-secret-1', 'sandbox', 't', '{"p":"payload-secret"}', 10, 0, 0, 0, 'pending',
                        1800000000, 'apns', NULL),
                       ('a2', 'tok-secret-2', 'sandbox', 't', '{}', 10, 0, 0, 0, 'pending', 1800000100, 'webpush', NULL),
                       ('a3', 'tok-secret-3', 'sandbox', 't', '{}', 10, 0, 3, 0, 'failed', 1700000000, 'apns',
                        'BadDeviceToken');
                """,
            ])
        #expect(run.status == 0, "\(run.error)")
    }

    @Test("push outbox shows what waits by state and kind, the oldest, and why the failed failed; never a token")
    func outboxCommand() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let database = "sqlite:" + data.file("h.sqlite")
        let empty = try ServerProcess.run(["push", "outbox", "--database", database])
        #expect(
            empty.status == 0 && empty.output.contains("pending  0") && empty.output.contains("oldest waiting: none"))
        try Self.queue(in: data.file("h.sqlite"))
        let shown = try ServerProcess.run(["push", "outbox", "--database", database])
        #expect(shown.status == 0, "\(shown.error)")
        #expect(shown.output.contains("pending  2  (apns 1, webpush 1)"), "\(shown.output)")
        #expect(shown.output.contains("failed   1  (apns 1)") && shown.output.contains("failed 1× BadDeviceToken"))
        #expect(shown.output.contains("oldest waiting: 2027-01-15T08:00:00Z"))
        let json = try ServerProcess.run(["push", "outbox", "--json", "--database", database])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect((object["pending"] as? [String: Any])?["total"] as? Int == 2)
        #expect((object["pending"] as? [String: Any])?["webpush"] as? Int == 1)
        #expect((object["sending"] as? [String: Any])?["total"] as? Int == 0)
        #expect(object["oldestWaitingAt"] as? String == "2027-01-15T08:00:00Z")
        for text in [shown.output, json.output] {
            #expect(!text.contains("tok-secret") && !text.contains("payload-secret"))
        }
        #expect(try ServerProcess.run(["push", "outbox", "--help"]).status == 0)
    }
}
