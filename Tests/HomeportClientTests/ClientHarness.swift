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

    func open(_ request: ClientRequest) async throws -> ClientStream {
        lock.withLock { sent.append(request) }
        return try await inner.open(request)
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
    /// More `serve` options (APNs settings, a catalogue).
    let extra: [String]
    private(set) var ports: [String: Int] = [:]
    private(set) var processes: [String: ServerProcess] = [:]

    /// Starts a process per host. A free port can be taken by another listener before the server
    /// binds it: then it starts again on other ports (a few times).
    init(hosts: [String], extra: [String] = []) throws {
        directory = try TemporaryDirectory()
        self.hosts = hosts
        self.extra = extra
        for attempt in 1...5 {
            var ports: [String: Int] = [:]
            for host in hosts { ports[host] = try RawHTTP.freePort() }
            self.ports = ports
            do {
                try start()
                return
            } catch let error as RawHTTPError where error.description.contains("Address already in use") && attempt < 5
            {
                stop()
            }
        }
    }

    deinit {
        stop()
        directory.remove()
    }

    var database: String { "sqlite:" + directory.file("h.sqlite") }

    func start() throws {
        for host in hosts where processes[host] == nil {
            processes[host] = try ServerProcess(
                serve: [
                    "--listen", ListenText.of(host, ports[host]!), "--database", database, "--signup", "open",
                    "--password-iterations", "1000", "--outbox", directory.file("outbox"),
                ] + extra)
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
func makeClient(
    _ home: TemporaryDirectory, _ transport: SpyTransport, path: String = "home", events: EventLog? = nil,
    configure: (inout ClientConfiguration) -> Void = { _ in }
) throws -> HomeportClient {
    var configuration = ClientConfiguration()
    configuration.probeDeadline = .seconds(2)
    configuration.requestDeadline = .seconds(5)
    configure(&configuration)
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

/// Canned answers of a scripted Homeport peer (a listener that says what a test wants it to say).
enum Peer {
    static let json = ["Content-Type": "application/json"]

    /// `GET /api/v1/server-identity` as a Homeport server answers it.
    static func identity(_ id: InstanceID, product: String = "homeport", protocolVersion: String = "1")
        -> RecordingListener.Canned
    {
        .init(
            200, json, #"{"instanceId":"\#(id)","product":"\#(product)","protocolVersion":\#(protocolVersion)}"#)
    }

    /// `GET /api/v1/app-info`, with or without an `instanceId`.
    static func appInfo(_ id: InstanceID?, product: String = "homeport", version: String = "0.1.0")
        -> RecordingListener.Canned
    {
        let instance = id.map { #","instanceId":"\#($0)""# } ?? ""
        return .init(
            200, json,
            #"{"features":["server-connection-identity","session-token"],"product":"\#(product)","#
                + #""protocolVersion":1,"version":"\#(version)"\#(instance)}"#)
    }

    /// The API prefix's refusal of a dead token.
    static let notAuthenticated = RecordingListener.Canned(
        401, json, #"{"error":{"code":"not_authenticated","message":"Sign in to use this route."}}"#)

    /// The app door's "not signed in" (also its answer to a logout).
    static let signedOutEnvelope = RecordingListener.Canned(
        401, json, #"{"data":{"flows":[{"id":"login"}]},"meta":{"is_authenticated":false},"status":401}"#)

    /// The app door's answer to a sign-in that succeeded.
    static func signedIn(token: String, email: String) -> RecordingListener.Canned {
        .init(
            200, json,
            #"{"data":{"methods":[],"user":{"display":"x","email":"\#(email)","has_usable_password":true,"id":1}},"#
                + #""meta":{"is_authenticated":true,"session_token":"\#(token)"},"status":200}"#)
    }
}

/// A client over a directory and a memory vault that hold one record (and its token), on `path`.
func scriptedClient(
    _ home: TemporaryDirectory, record: ServerRecord, token: String = "t0ken", path: String = "home",
    transport: SpyTransport = SpyTransport(), events: EventLog? = nil
) throws -> (client: HomeportClient, vault: MemoryVault) {
    let vault = MemoryVault()
    let directory = try ServerDirectory(directory: home.file(UUID().uuidString))
    try directory.save(record)
    try vault.store(token: token, for: record.key)
    var configuration = ClientConfiguration()
    configuration.probeDeadline = .seconds(2)
    configuration.requestDeadline = .seconds(2)
    let client = HomeportClient(
        directory: directory, vault: vault, transport: transport, configuration: configuration, networkPath: path,
        onEvent: { event in events?.add(event) })
    return (client, vault)
}

/// A record of installation `id` whose primary is `primary`, signed in on `path`, with `verified`
/// alternatives verified on that path.
func record(
    _ id: InstanceID?, primary: String, verified: [String] = [], path: String = "home", product: String? = "homeport"
) throws -> ServerRecord {
    ServerRecord(
        instanceID: id, product: product, email: "ada@example.com",
        primary: try ServerAddress(parsing: primary, allowHTTP: true),
        alternatives: try verified.map {
            .init(address: try ServerAddress(parsing: $0, allowHTTP: true), verifiedPaths: [path: Date()])
        },
        lastWinner: nil, signedOut: false, signedInPath: path)
}

/// `homeport login URL --signup` as ada, over plain HTTP, with `extra` arguments.
func signUpWithCommandLine(_ url: String, environment: [String: String], extra: [String] = []) throws
    -> (status: Int32, output: String, error: String)
{
    try ServerProcess.runClient(
        ["login", url, "--email", "ada@example.com", "--password-stdin", "--allow-http", "--signup"] + extra,
        environment: environment, input: password + "\n")
}
