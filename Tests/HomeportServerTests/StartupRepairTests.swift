import Foundation
import HomeportLogging
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import Testing

/// What a server finds damaged in its database at start, it repairs or reports; it does not
/// refuse to start for ever.
@Suite("Repairs at start", .tags(.postgres))
struct StartupRepairTests {
    @Test(
        "a damaged secret row is replaced with a warning, and the web door's forms work again",
        arguments: Backend.allCases)
    func damagedSecret(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: url)
        let first = try HomeportApplication(
            configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
        first.shutdown()
        let database = try url.open()
        defer { database.close() }
        for damage in ["not hex at all", String(repeating: "é", count: 32), String(repeating: "zz", count: 32), ""] {
            try database.execute("UPDATE server_secrets SET value = $1 WHERE name = 'csrf'", [.text(damage)])
            let log = MemoryLogSink()
            let application = try HomeportApplication(
                configuration: configuration, logger: Logger(label: "test", sink: log))
            try application.start()
            let page = try RawHTTP.request(port: application.port, path: "/account/login")
            application.shutdown()
            #expect(page.status == 200 && page.text.contains("csrf"), "\(damage.debugDescription)")
            #expect(log.lines.contains { $0.contains("warning") && $0.contains("damaged") && $0.contains("csrf") })
            let stored = try database.execute("SELECT value FROM server_secrets WHERE name = 'csrf'").first?.string(
                "value")
            #expect(stored?.count == 64 && stored?.allSatisfy(\.isHexDigit) == true)
        }
    }
}
