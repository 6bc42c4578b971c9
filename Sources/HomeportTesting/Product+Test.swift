import HomeportServer

extension Product {
    /// Runs `body` against this product's server, started in this process for it (see
    /// ``TestServer``) and stopped afterwards, whatever `body` does.
    ///
    /// ```swift
    /// @Test func addsABook() throws {
    ///     try Product.bookOrbit.test { app in
    ///         let ada = try app.signUp("ada@example.com")
    ///         let added = try app.post("/api/v1/books", json: ["title": "Kindred"], as: ada)
    ///         #expect(added.status == 201)
    ///     }
    /// }
    /// ```
    public func test<T>(_ options: TestOptions = TestOptions(), _ body: (TestServer) throws -> T) throws -> T {
        let server = try TestServer(product: self, options: options)
        defer { server.stop() }
        return try body(server)
    }

    /// ``test(_:_:)`` for a test that awaits (a client of HomeportClient, say).
    public func test<T>(_ options: TestOptions = TestOptions(), _ body: (TestServer) async throws -> T)
        async throws -> T
    {
        let server = try TestServer(product: self, options: options)
        defer { server.stop() }
        return try await body(server)
    }
}
