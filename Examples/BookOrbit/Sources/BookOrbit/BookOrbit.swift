import HomeportServer

extension Product {
    /// BookOrbit: a reading list per account, and loans that notify their owner once ready.
    public static let bookOrbit = Product(
        name: "bookorbit", version: "1.0.0",
        migrations: BookOrbitSchema.migrations,
        notificationCodes: [CatalogueCode(code: BookOrbitCode.loanReady, title: "A loan is ready")],
        budgets: [BookOrbitBudget.booksAdded],
        features: ["bookorbit-books", "bookorbit-loans"],
        tasks: [ProductTask("loans", every: .milliseconds(250)) { try Loans(services: $0).notifyReady() }],
        pushAppDataKey: "bookorbit"
    ) { api in
        let books = Books(services: api.services)
        let loans = Loans(services: api.services)
        api.get("/books") { _, caller in try books.list(caller) }
        api.post("/books", status: .created) { request, caller in try books.add(request, caller) }
        api.patch("/books/:id") { request, caller in try books.rename(request, caller) }
        api.delete("/books/:id") { request, caller in try books.remove(request, caller) }
        api.group("/books/:id/loan") { loan in
            loan.post(status: .accepted) { request, caller in try loans.start(request, caller) }
            loan.get { request, caller in try loans.show(request, caller) }
        }
        api.get("/loans", requiring: BookOrbitGroup.librarian) { _, _ in try loans.all() }
        api.addPublic(.get, "/bookorbit-status") { _ in try .json(["status": "open"]) }
    }
}

/// BookOrbit's budgets: declared once, charged by value.
public enum BookOrbitBudget {
    /// Books an account adds: 30 an hour (`--rate-limits books-added-per-account=N/SECONDS`).
    public static let booksAdded = ProductBudget(
        "books-added-per-account", limit: RateLimit(30, per: 3600), per: .account)
}

/// The account groups BookOrbit reads (the operator gives them: `users groups EMAIL add GROUP`).
public enum BookOrbitGroup {
    /// A librarian sees every account's loans (`GET /api/v1/loans`).
    public static let librarian = "bookorbit:librarian"
}

/// BookOrbit's notification codes.
public enum BookOrbitCode {
    /// A loan is ready: thread `loan:{id}`, object id the loan's id.
    public static let loanReady = "bookorbit:loan.ready"
}
