import Dispatch
import HomeportServer
import Synchronization

// Benchmark (not a test): a product's signed-in routes, for benchmarks/session to compare with the
// built-in app-info in the same run. Both answer app-info's size: `/shelf/prepared` with bytes
// encoded once (as app-info's are), which measures what the product face adds to the pipeline;
// `/shelf` encoded per request from the caller, as a typical handler does. It imports
// HomeportServer only, as a product outside this package does. `/shelf/async` is `/shelf` with its
// answer made by an `async` function the worker thread waits for: what supporting async handlers
// would cost each request (docs/embedding.md, "Why handlers are synchronous").
// Run: homeport-product-benchmark serve [homeport-server serve options].

/// The answer: app-info's members, plus who called.
struct Shelf: Encodable, Sendable {
    var product = "benchproduct"
    var version = "1.0.0"
    var protocolVersion = 1
    var features = ["server-connection-identity", "session-token", "push-server-id"]
    var account: Int64
    var email: String
    var note = "answered per caller"
}

let product = Product(name: "benchproduct", version: "1.0.0") { api in
    let prepared = try HTTPResponse.encode(Shelf(account: 1, email: "bench@example.com"))
    api.get("/shelf") { _, caller in try .json(Shelf(account: caller.accountID, email: caller.email)) }
    api.get("/shelf/prepared") { _, _ in .json(bytes: prepared) }
    api.get("/shelf/async") { _, caller in
        let (account, email) = (caller.accountID, caller.email)
        return try bridged { try HTTPResponse.json(await shelf(account: account, email: email)) }
    }
}

/// `/shelf`'s answer, made by an async function.
@Sendable func shelf(account: Int64, email: String) async -> Shelf {
    Shelf(account: account, email: email)
}

/// Runs `work` on Swift's concurrency pool and waits for it on this (a libmicrohttpd worker's)
/// thread: the bridge an async handler would need.
func bridged<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let outcome = Mutex<Result<T, any Error>?>(nil)
    Task {
        let result: Result<T, any Error>
        do { result = .success(try await work()) } catch { result = .failure(error) }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.withLock { $0! }.get()
}
ServerCommandLine.main(product: product)
