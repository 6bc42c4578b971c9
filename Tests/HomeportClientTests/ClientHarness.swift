import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire

/// Records every request the client sends, then sends it for real.
final class SpyTransport: ClientTransport, @unchecked Sendable {
    private let inner = HomeportClient.defaultTransport()
    private let lock = NSLock()
    private var sent: [ClientRequest] = []

    func send(_ request: ClientRequest) async throws -> ClientResponse {
        lock.withLock { sent.append(request) }
        return try await inner.send(request)
    }

    var requests: [ClientRequest] { lock.withLock { sent } }
    func reset() { lock.withLock { sent.removeAll() } }

    /// Origins that received a session token.
    var originsGivenToken: Set<String> {
        Set(requests.filter { $0.headers["X-Session-Token"] != nil }.map { "\($0.url.host ?? ""):\($0.url.port ?? 0)" })
    }
}

/// One installation: one SQLite database served by a process per loopback host, on fixed ports.
final class Installation {
    let directory: TemporaryDirectory
    let hosts: [String]
    let ports: [String: Int]
    private(set) var processes: [String: ServerProcess] = [:]

    init(hosts: [String]) throws {
        directory = try TemporaryDirectory()
        self.hosts = hosts
        var ports: [String: Int] = [:]
        for host in hosts { ports[host] = try RawHTTP.freePort() }
        self.ports = ports
        try start()
    }

    deinit {
        stop()
        directory.remove()
    }

    var database: String { "sqlite:" + directory.file("h.sqlite") }

    func start() throws {
        for host in hosts where processes[host] == nil {
            processes[host] = try ServerProcess(serve: [
                "--listen", ListenText.of(host, ports[host]!), "--database", database, "--signup", "open",
                "--password-iterations", "1000", "--outbox", directory.file("outbox"),
            ])
        }
    }

    func stop(_ host: String? = nil) {
        for (name, process) in processes where host == nil || name == host {
            process.stop()
            processes[name] = nil
        }
    }

    func address(_ host: String) throws -> ServerAddress {
        try ServerAddress(parsing: "http://" + ListenText.of(host, ports[host]!), allowHTTP: true)
    }
}

enum ListenText {
    static func of(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// A client with its own state directory and a file vault.
func makeClient(_ home: TemporaryDirectory, _ transport: SpyTransport, path: String = "home", events: EventLog? = nil)
    throws -> HomeportClient
{
    var configuration = ClientConfiguration()
    configuration.probeDeadline = .seconds(2)
    configuration.requestDeadline = .seconds(5)
    return HomeportClient(
        directory: try ServerDirectory(directory: home.path), vault: try FileVault(directory: home.file("vault")),
        transport: transport, configuration: configuration, networkPath: path,
        onEvent: { event in events?.add(event) })
}

final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [ClientEvent] = []
    func add(_ event: ClientEvent) { lock.withLock { events.append(event) } }
    var all: [ClientEvent] { lock.withLock { events } }
}

let password = "correct horse battery"
