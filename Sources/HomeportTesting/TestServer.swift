import Foundation
import HomeportServer
import HomeportStorage
import Synchronization

/// A product's server in this process, for its tests: listening on a free loopback port, on a
/// database of its own, with a clock that moves when told to, tasks that run when told to, and
/// mail kept in memory. Made by
/// `Product.test(_:_:)`, which stops it afterwards.
///
/// Requests go to it over real HTTP (``request(_:_:as:body:headers:)``) and pass through the
/// same pipeline as a deployed server's: the session token, the budgets, the errors.
public final class TestServer: Sendable {
    /// The password ``signUp(_:password:)`` gives when none is named.
    public static let password = "correct horse battery"

    /// The product under test.
    public let product: Product
    /// The clock the server reads.
    public let clock: TestClock
    /// What the product's handlers and tasks get: its database, notifications, budgets, logger.
    public var services: ProductServices { application.services }
    /// The loopback port it listens on.
    public let port: Int
    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    let application: HomeportApplication
    private let mailer = RecordingMailer()
    private let directory: URL?

    init(product: Product, options: TestOptions) throws {
        let database: DatabaseURL
        switch options.store {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "homeport-testing-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            self.directory = directory
            database = .sqlite(path: directory.appendingPathComponent("test.sqlite").path)
        case .postgres(let url):
            directory = nil
            database = .postgres(url: url)
        }
        var configuration = ServerConfiguration(
            listen: .init(host: "127.0.0.1", port: 0), database: database,
            outboxDirectory: (directory ?? FileManager.default.temporaryDirectory).path)
        configuration.http.workerThreads = 2
        configuration.http.poolThreads = 1
        configuration.logLevel = .warning
        configuration.accounts.signup = .open
        // Fast hashes, and Homeport's own budgets wide enough for a test's sign-ups and
        // sign-ins from one address; the product's budgets stay as declared.
        configuration.accounts.passwordIterations = 1000
        configuration.accounts.rateLimits.signupPerAddress = RateLimit(10_000, per: 3600)
        configuration.accounts.rateLimits.loginPerAddress = RateLimit(10_000, per: 60)
        configuration.accounts.rateLimits.productLimits = options.budgets
        configuration.push.topic = options.pushTopic
        clock = TestClock(options.start)
        self.product = product
        // The product's tasks run when the test says (``run(task:)``), never on a timer of their own.
        var served = product
        served.tasks = []
        do {
            application = try HomeportApplication(
                configuration: configuration, product: served,
                logger: Logger(label: "test", minimumLevel: .warning), mailer: mailer, clock: clock)
            port = try application.start()
        } catch {
            if let directory { try? FileManager.default.removeItem(at: directory) }
            throw error
        }
    }

    /// Stops the server and removes its temporary files.
    func stop() {
        application.shutdown()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// Runs the product's task `name` once, now, as its timer would (an error it throws is
    /// thrown here). A task that does not exist is a test's mistake: it throws.
    public func run(task name: String) throws {
        guard let task = product.tasks.first(where: { $0.name == name }) else {
            throw TestServerError("\(product.name) has no task named '\(name)'")
        }
        try task.work(services)
    }

    /// The mail the server sent, oldest first (to, subject, body).
    public var mail: [TestMail] { mailer.sent }
}

/// A mail the server sent.
public struct TestMail: Sendable, Hashable {
    /// The address it went to.
    public var to: String
    /// Its subject.
    public var subject: String
    /// Its plain-text body.
    public var body: String
}

/// What a ``TestServer`` could not do, and why.
public struct TestServerError: Error, CustomStringConvertible {
    /// Why.
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Keeps the server's mail in memory, sent at once.
final class RecordingMailer: Mailer {
    private let mails = Mutex<[TestMail]>([])

    func send(_ mail: Mail) throws {
        mails.withLock { $0.append(TestMail(to: mail.to, subject: mail.subject, body: mail.body)) }
    }

    var sent: [TestMail] { mails.withLock { $0 } }
}
