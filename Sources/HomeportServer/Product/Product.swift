import HomeportStorage

/// A product built on Homeport: what it adds to the server, declared in one value.
///
/// A product's API lives under `/api/v1` behind the one session reader: its routes pass through
/// the same pipeline as Homeport's own (header-only token, `no-store`, the signed-in check), and
/// each handler gets a ``SignedIn`` caller instead of a token. Its migrations are numbered in a
/// component of their own (its ``name``), applied by `serve` and `migrate` and reported by
/// `/readyz`; its notification codes join the catalogue (so `mv` changes with them); its budgets
/// use the server's rate limiter; its features are announced by app-info.
///
/// ```swift
/// let product = Product(name: "bookorbit", version: "1.0.0") { api in
///     api.get("/books") { request, caller in … }
/// }
/// ```
public struct Product: Sendable {
    /// The product's name: what the identity route announces (unless the operator names it
    /// otherwise), the component its migrations are recorded under, and the prefix its tables
    /// must carry (`bookorbit_…`). Lowercase letters, digits, `-` and `_`.
    public var name: String
    /// Its version, as app-info announces it.
    public var version: String
    /// The executable's name in help and messages (`bookorbit-server`).
    public var commandName: String
    /// Its schema, numbered from 1 in its own component.
    public var migrations: [Migration]
    /// Codes it notifies with, added to the catalogue (`bookorbit:loan.ready`).
    public var notificationCodes: [CatalogueCode]
    /// Its rate limits, each one action's budget.
    public var budgets: [ProductBudget]
    /// Capabilities it adds to app-info's `features`.
    public var features: [String]
    /// Work it runs in the background, on every replica.
    public var tasks: [ProductTask]
    /// The payload's app-data key (`homeport` unless the product names its own).
    public var pushAppDataKey: String?
    /// Declares its routes, once, when the server starts.
    public var routes: @Sendable (inout ProductRoutes) throws -> Void

    /// Describes a product.
    public init(
        name: String, version: String, commandName: String? = nil, migrations: [Migration] = [],
        notificationCodes: [CatalogueCode] = [], budgets: [ProductBudget] = [], features: [String] = [],
        tasks: [ProductTask] = [], pushAppDataKey: String? = nil,
        routes: @escaping @Sendable (inout ProductRoutes) throws -> Void = { _ in }
    ) {
        self.name = name
        self.version = version
        self.commandName = commandName ?? "\(name)-server"
        self.migrations = migrations
        self.notificationCodes = notificationCodes
        self.budgets = budgets
        self.features = features
        self.tasks = tasks
        self.pushAppDataKey = pushAppDataKey
        self.routes = routes
    }

    /// Homeport on its own: no routes, migrations, codes or budgets of a product.
    public static let homeport = Product(
        name: Migrator.homeportComponent, version: ServerDefaults.version, commandName: "homeport-server")

    /// Whether this is Homeport on its own.
    var isHomeport: Bool { name == Migrator.homeportComponent }

    /// Every component's migrator: Homeport's first, then the product's.
    var migrators: [Migrator] {
        isHomeport
            ? [HomeportSchema.migrator] : [HomeportSchema.migrator, Migrator(component: name, migrations: migrations)]
    }

    /// What every table and index of the product starts with: its name, `-` as `_`, then `_`.
    public var tablePrefix: String { name.replacingOccurrences(of: "-", with: "_") + "_" }

    /// Throws a sentence naming what is wrong with the declaration (before anything is served).
    func validate() throws {
        guard Migrator.isComponentName(name) else {
            throw ConfigurationError("a product's name is 1–64 of a-z 0-9 - _, starting with a letter: not '\(name)'")
        }
        guard !migrations.contains(where: { $0.version < 1 }) else {
            throw ConfigurationError("\(name): migrations are numbered from 1")
        }
        guard Set(migrations.map(\.version)).count == migrations.count else {
            throw ConfigurationError("\(name): two migrations have the same version")
        }
        for migration in migrations {
            for dialect in [SQLDialect.sqlite, .postgres] {
                for statement in migration.statements(for: dialect) {
                    let rule =
                        "a product creates, changes and writes only its own tables, which start with '\(tablePrefix)'"
                    switch MigrationGuard.read(statement, dialect: dialect) {
                    case .severalStatements:
                        throw ConfigurationError(
                            "\(name) migration \(migration.version) has a string of several statements: give each its own string (SQLite would run the first and drop the rest)"
                        )
                    case .refused(let reason):
                        throw ConfigurationError(
                            "\(name) migration \(migration.version) is refused: \(reason); \(rule)")
                    case .touches(let objects):
                        for object in objects where !object.hasPrefix(tablePrefix) {
                            throw ConfigurationError(
                                "\(name) migration \(migration.version) touches '\(object.prefix(80))': \(rule), so they never meet Homeport's"
                            )
                        }
                    }
                }
            }
        }
        for code in notificationCodes {
            if let problem = ServerCatalogue.problem(code) {
                throw ConfigurationError("\(name): not a catalogue code with a title a person can read: \(problem)")
            }
        }
        var budgetNames = Set(RateLimitPolicy.names)
        for budget in budgets {
            guard ProductBudget.isName(budget.name), budgetNames.insert(budget.name).inserted else {
                throw ConfigurationError(
                    "\(name): the budget '\(budget.name.prefix(80))' needs a name of its own (a-z 0-9 -), unlike Homeport's and the product's other budgets"
                )
            }
        }
        for feature in features where feature.isEmpty || feature.count > 64 || feature.contains(where: \.isWhitespace) {
            throw ConfigurationError(
                "\(name): a feature is 1–64 characters without spaces, not '\(feature.prefix(80))'")
        }
    }
}
