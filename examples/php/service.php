<?php
// A toy payment service around idempotency.php, run by test/php-service.test.ts against PostgreSQL
// and MySQL/MariaDB: a master forks --workers worker processes; each worker serves its share of the
// jobs, every request in a request process of its own (forked, as php-fpm serves requests), so a
// request that crashes takes only itself down — after its reservation committed.
//
//   php service.php --dsn mysql://root@127.0.0.1:3306/payments [--workers 4] [--ttl 86400]
//   stdin: [{"key": "k1", "amount": 1299, "action": "complete" | "decline" | "timeout" | "crash"}, …]
//          (a key sent again with the same amount is a retry; with another amount, a conflict)
//   stdout: one JSON line per request: {"key", "action", "outcome": "owner" | "replay" | "conflict" |
//           "in_progress" | "crashed" | "error", "http", "status" (what an owner left the record in)}
declare(strict_types=1);
require __DIR__ . '/forking.php';
require __DIR__ . '/idempotency.php';

$opt = getopt('', ['dsn:', 'workers:', 'ttl:', 'scope:', 'operation:']);
[$dsn, $user, $password] = pdo_dsn($opt['dsn'] ?? getenv('DATABASE_URL') ?: '', null, null);
$workers = max(1, (int) ($opt['workers'] ?? 4));
$ttl = (int) ($opt['ttl'] ?? 86400);
$scope = $opt['scope'] ?? 'tenant:acme';
$operation = $opt['operation'] ?? 'capture_payment';
$jobs = json_decode(stream_get_contents(STDIN), true, 512, JSON_THROW_ON_ERROR);
$out = fn (array $line) => fwrite(STDOUT, json_encode($line, JSON_UNESCAPED_SLASHES | JSON_THROW_ON_ERROR) . "\n");

/** One request, in its own process: connect, reserve, call the provider, record what happened, answer. */
function serve(array $job, array $conn, string $scope, string $operation, int $ttl, callable $out): void
{
    $store = new IdempotencyStore(new PDO(...$conn));
    $payload = ['amount' => $job['amount'], 'currency' => 'EUR', 'order' => 'o-' . $job['key']];
    $line = ['key' => $job['key'], 'action' => $job['action']];
    try {
        $r = $store->begin($scope, $operation, $job['key'], $payload, $ttl,
            ['amount_minor' => $job['amount'], 'currency' => 'EUR', 'provider' => 'mockpay']);
    } catch (IdempotencyError $e) {
        $out($line + ['outcome' => 'error', 'http' => $e->getCode(), 'error' => $e->getMessage()]);
        return;
    }
    if ($r['outcome'] !== 'owner') {
        $out($line + ['outcome' => $r['outcome'], 'http' => $r['http']]);
        return;
    }
    usleep(10_000); // "call the payment provider"
    $json = [['Content-Type', 'application/json']];
    switch ($job['action']) {
        case 'crash':
            posix_kill(posix_getpid(), SIGKILL); // the request process dies: the record stays processing
            return;
        case 'decline':
            $store->fail($r['id'], 402, $json, '{"error":"card_declined"}', 'card declined by mockpay');
            $out($line + ['outcome' => 'owner', 'http' => 402, 'status' => 'failed']);
            return;
        case 'timeout':
            // The charge was sent and no answer came: the outcome is unknown — pending, for reconciliation.
            $store->markPending($r['id'], 'mockpay', 'req_' . bin2hex(random_bytes(6)), 'provider timeout after 5000 ms');
            $out($line + ['outcome' => 'owner', 'http' => 202, 'status' => 'pending']);
            return;
        default:
            $charge = 'ch_' . bin2hex(random_bytes(6));
            $store->complete($r['id'], 201, $json, json_encode(['id' => $charge, 'amount' => $job['amount']]), $charge, 'psp_' . $charge);
            $out($line + ['outcome' => 'owner', 'http' => 201, 'status' => 'completed']);
    }
}

$conn = [$dsn, $user, $password];
exit(serve_forked($jobs, $workers,
    fn (array $job) => serve($job, $conn, $scope, $operation, $ttl, $out),
    fn (array $job, int $signal) => $out(['key' => $job['key'], 'action' => $job['action'], 'outcome' => 'crashed', 'signal' => $signal, 'status' => 'processing'])));
