import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// The tables that grow with the accounts, their sessions, devices and notifications: a query
/// that reads one of them whole costs more with every account.
private let growingTables: Set<String> = [
    "users", "sessions", "password_resets", "rate_limits", "mail_failures", "push_devices", "notification_mutes",
    "notifications", "notification_data", "push_outbox", "mail_queue", "verified_emails", "email_verifications",
    "product_notifications", "product_notification_accounts", "authenticators", "recovery_codes", "session_factors",
    "push_gateway_changes",
]

/// Statements that read a growing table whole on purpose, and why.
private let wholeTableOnPurpose: [(marker: String, why: String)] = [
    ("FROM push_devices d JOIN users u", "push devices: the operator's listing of every device"),
    ("SELECT state, COUNT(*) AS count FROM push_outbox GROUP BY state", "the outbox's counts, for /metrics"),
    ("FROM users ORDER BY id", "users list: the operator's listing of every account"),
    (
        "DELETE FROM push_outbox WHERE device_token IN",
        "the pushes waiting for a device that left its account (a sign-out, an unregistration, a move, "
            + "the cap, a deletion): rare, where an index by device would cost every push its upkeep "
            + "(ten times the outbox's deletes, measured)"
    ),
]

@Suite(
    "Every statement a server runs reads the tables that grow through an index (EXPLAIN of each)",
    .tags(.process, .postgres, .interop))
struct IndexUseTests {
    @Test(
        "sign-up, sign-in, the API, pushes, mutes, the stream, resets, retention, sign-out and deletion",
        arguments: Backend.allCases)
    func everyStatementUsesAnIndex(backend: Backend) throws {
        let standIn = try APNsStandIn()
        try withAccounts(backend, push: try pushSettings(standIn), clockStart: Date()) { server in
            try Self.check(server, atLeast: 30) { try exercise(server) }
        }
    }

    @Test("sign-up and sign-in with verification by a mailed code", arguments: Backend.allCases)
    func verificationUsesAnIndex(backend: Backend) throws {
        try withAccounts(backend, emailVerification: .code) { server in
            try Self.check(server, atLeast: 5) {
                let pending = try server.signupPending("ada@example.com")
                _ = try server.verify(pending, "AAAA-AAAA")
                _ = try server.app("POST", "auth/email/verify/resend", token: pending)
                let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
                #expect(try server.verify(pending, code).status == 200)
            }
        }
    }

    /// Runs `flows` while the server's statements are kept, then checks each query's plan.
    static func check(_ server: AccountsHarness, atLeast minimum: Int, _ flows: () throws -> Void) throws {
        let source: String
        switch server.url {
        case .sqlite(let path): source = path
        case .postgres(let url): source = url
        }
        StatementLog.start(source: source)
        let statements: [(sql: String, parameters: [SQLValue])]
        do {
            try flows()
            statements = StatementLog.stop(source: source)
        } catch {
            _ = StatementLog.stop(source: source)
            throw error
        }
        var checked = 0
        for statement in statements where isQuery(statement.sql) {
            guard !wholeTableOnPurpose.contains(where: { statement.sql.contains($0.marker) }) else { continue }
            let scans = try wholeTableReads(statement, in: server.application.database)
            checked += 1
            #expect(scans.isEmpty, "reads \(scans.joined(separator: ", ")) whole:\n\(statement.sql)")
        }
        #expect(checked >= minimum, "\(checked) statements checked")
    }

    /// The flows: what an app, an operator and the background tasks do.
    private func exercise(_ server: AccountsHarness) throws {
        let ada = try server.signIn("ada@example.com")
        let bob = try server.signIn("bob@example.com")
        #expect(try server.app("GET", "/api/v1/app-info", token: ada).status == 200)
        #expect(try server.app("GET", "/api/v1/auth/standing", token: ada).status < 500)
        #expect(try server.app("GET", "auth/session", token: ada).status == 200)
        let device = String(repeating: "ab", count: 32)
        #expect(try server.register(device, token: ada).status == 200)
        #expect(try server.register(String(repeating: "cd", count: 32), token: bob).status == 200)
        #expect(try server.app("PUT", "/api/v1/notifications/mutes/chat:1", token: ada).status < 300)
        #expect(try server.app("GET", "/api/v1/notifications/mutes", token: ada).status == 200)
        #expect(try server.app("DELETE", "/api/v1/notifications/mutes/chat:1", token: ada).status < 300)
        try server.application.push.notify(
            ProductNotification(code: ServerCatalogue.testCode, title: "Hello", thread: "chat:1", objectID: 7),
            email: "ada@example.com")
        try server.drain()
        let stream = try server.openStream(ada, lastEventID: 0)
        #expect(stream.wait(for: "Hello"))
        #expect(try server.app("POST", "/api/v1/push/test", token: ada).status < 500)
        #expect(try server.app("DELETE", "/api/v1/push/devices/\(device)", token: ada).status < 300)
        #expect(
            try server.app(
                "POST", "account/password/change", token: bob,
                json: ["current_password": "correct horse battery", "new_password": "another horse battery"]
            ).status < 500)
        #expect(try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"]).status == 200)
        _ = try server.app("POST", "auth/login", json: ["email": "ada@example.com", "password": "wrong password"])
        #expect(try RawHTTP.request(port: server.port, path: "/readyz").status == 200)
        try server.application.retention.sweep()
        _ = try server.application.accounts.accounts()
        #expect(try server.app("DELETE", "auth/session", token: ada).status == 401)
        #expect(try server.application.accounts.deleteAccount(email: "bob@example.com"))
    }

    static func isQuery(_ sql: String) -> Bool {
        let head = sql.trimmingCharacters(in: .whitespacesAndNewlines).prefix(7).uppercased()
        return ["SELECT", "UPDATE", "DELETE", "INSERT", "WITH"].contains { head.hasPrefix($0) }
    }

    /// The growing tables the statement's plan reads whole (SQLite: `SCAN t`, even through an
    /// index, read end to end; PostgreSQL, with sequential scans made the last resort: `Seq Scan
    /// on t`).
    static func wholeTableReads(_ statement: (sql: String, parameters: [SQLValue]), in database: any Database) throws
        -> [String]
    {
        switch database.dialect {
        case .sqlite:
            let plan = try database.execute("EXPLAIN QUERY PLAN " + statement.sql, statement.parameters)
                .compactMap { $0.string("detail") }
            return plan.compactMap { line -> String? in
                guard line.hasPrefix("SCAN ") else { return nil }
                let table = String(line.dropFirst(5).prefix { $0 != " " })
                return growingTables.contains(table) ? "\(table) (\(line))" : nil
            }
        case .postgres:
            let plan: [String] = try database.transaction { db in
                try db.execute("SET LOCAL enable_seqscan = off")
                return try db.execute("EXPLAIN " + statement.sql, statement.parameters).compactMap {
                    $0.string("QUERY PLAN")
                }
            }
            return plan.compactMap { line -> String? in
                guard let range = line.range(of: "Seq Scan on ") else { return nil }
                let table = String(line[range.upperBound...].prefix { $0 != " " })
                return growingTables.contains(table) ? "\(table) (\(line.trimmingCharacters(in: .whitespaces)))" : nil
            }
        }
    }
}
