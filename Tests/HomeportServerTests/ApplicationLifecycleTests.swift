import Foundation
import HomeportLogging
import HomeportStorage
import HomeportTestSupport
import Testing

@testable import HomeportServer

#if canImport(Glibc)
    import Glibc
#endif

/// The application's background work, listeners included, is one ordered list: started in
/// order, stopped in reverse, and nothing left running when a start fails halfway.
@Suite("The application's lifecycle")
struct ApplicationLifecycleTests {
    /// The services named in a debug log, in the order they were `verb` (started, stopped).
    private static func services(_ verb: String, in log: MemoryLogSink) -> [String] {
        log.lines.compactMap { line in
            guard let range = line.range(of: "\(verb) ") else { return nil }
            let name = line[range.upperBound...].prefix { !$0.isWhitespace }
            return name.hasPrefix("homeport.") || name.hasPrefix("lifecycle.") ? String(name) : nil
        }
    }

    private static func replicaRows(_ url: DatabaseURL) throws -> Int {
        let database = try url.open()
        defer { database.close() }
        return try ReplicaStore(database, dialect: database.dialect).live().count
    }

    @Test("a stop ends the open streams, drains, removes this replica's row, and stops the services in reverse")
    func stopInReverse() throws {
        let (url, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: url)
        configuration.http.workerThreads = 2
        configuration.accounts = AccountSettings(signup: .open, passwordIterations: 1000)
        let ticked = DispatchSemaphore(value: 0)
        let product = Product(
            name: "lifecycle", version: "1.0",
            tasks: [ProductTask("tick", every: .milliseconds(10)) { _ in ticked.signal() }])
        let log = MemoryLogSink()
        let application = try HomeportApplication(
            configuration: configuration, product: product,
            logger: Logger(label: "test", minimumLevel: .debug, sink: log))
        try application.start()
        #expect(ticked.wait(timeout: .now() + 30) == .success, "the product's task runs")
        #expect(try Self.replicaRows(url) == 1)

        let signup = try RawHTTP.request(
            port: application.port, method: "POST", path: "/_allauth/app/v1/auth/signup",
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        let token = try #require(signup.sessionToken)
        let stream = try openNotificationStream(port: application.port, token: token)
        defer { close(stream.fd) }

        application.shutdown()
        #expect(stream.wait(for: "never sent", timeout: 10) == false)
        #expect(stream.closed, "the stream ended with the server")
        #expect(try Self.replicaRows(url) == 0, "the replica's row went at the stop")
        #expect(!log.lines.contains { $0.contains("drain timeout passed") })

        let started = Self.services("started", in: log)
        #expect(
            started == [
                "homeport.replicas.heartbeat", "homeport.http", "homeport.push.retention", "homeport.stream.hub",
                "lifecycle.tick",
            ])
        #expect(Self.services("stopped", in: log) == started.reversed())
    }

    @Test("a listener that cannot start stops what started before it: the replica's row goes, the error is thrown")
    func failedStart() throws {
        let (url, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: url)
        configuration.http.workerThreads = 1
        let holder = try HomeportApplication(configuration: configuration, logger: Logger(label: "holder"))
        try holder.start()
        defer { holder.shutdown() }

        let (second, cleanUpSecond) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUpSecond() }
        configuration.database = second
        // `/metrics` on the port the first server holds.
        configuration.metricsListen = ListenAddress(host: "127.0.0.1", port: holder.port)
        let log = MemoryLogSink()
        let application = try HomeportApplication(
            configuration: configuration, logger: Logger(label: "test", minimumLevel: .debug, sink: log))
        #expect(throws: (any Error).self) { try application.start() }
        #expect(Self.services("started", in: log) == ["homeport.replicas.heartbeat"])
        #expect(Self.services("stopped", in: log) == ["homeport.replicas.heartbeat"])
        #expect(try Self.replicaRows(second) == 0, "the heartbeat's row was removed")
        application.shutdown()
    }
}
