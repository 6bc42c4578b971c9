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
        #expect(!text.contains("ada@example.com") && !text.contains(token), "no address, no token")
        #expect(server.stop() == 0)
    }
}
