import HomeportServer

// Benchmark (not a test): a product's signed-in routes, for benchmarks/session to compare with the
// built-in app-info in the same run. Both answer app-info's size: `/shelf/prepared` with bytes
// encoded once (as app-info's are), which measures what the product face adds to the pipeline;
// `/shelf` encoded per request from the caller, as a typical handler does. It imports
// HomeportServer only, as a product outside this package does.
// Run: homeport-product-benchmark serve [homeport-server serve options].

/// The answer: app-info's members, plus who called.
struct Shelf: Encodable {
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
}
ServerCommandLine.main(product: product)
