import HomeportServer

// Benchmark (not a test): a product's signed-in route, for benchmarks/session to compare with the
// built-in app-info in the same run. Its answer is app-info's size, encoded per request from the
// caller, as a product's handler would; it imports HomeportServer only, as a product outside this
// package does. Run: homeport-product-benchmark serve [homeport-server serve options].

/// The answer: app-info's members, plus who called.
struct Shelf: Encodable {
    var product = "benchproduct"
    var version = "1.0.0"
    var protocolVersion = 1
    var features = ["server-connection-identity", "session-token", "push-server-id", "shelf"]
    var account: Int64
    var session: String
}

let product = Product(name: "benchproduct", version: "1.0.0") { api in
    api.get("/shelf") { _, caller in try .json(Shelf(account: caller.accountID, session: caller.sessionHandle)) }
}
ServerCommandLine.main(product: product)
