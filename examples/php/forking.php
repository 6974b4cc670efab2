<?php
// How the toy services serve: a master forks $workers worker processes; each worker serves its
// share of the jobs (w, w + workers, …), every request in a request process of its own (forked,
// as php-fpm serves requests), so a request that crashes takes only itself down. Returns the exit
// code for the master: 0 when every worker ended cleanly.
declare(strict_types=1);

/**
 * @param callable(array): void $serve runs one job in its request process
 * @param callable(array, int): void $crashed told of a job whose request process died of a signal
 */
function serve_forked(array $jobs, int $workers, callable $serve, callable $crashed): int
{
    $children = [];
    for ($w = 0; $w < $workers; $w++) {
        $pid = pcntl_fork();
        if ($pid === -1) {
            fwrite(STDERR, "fork failed\n");
            return 1;
        }
        if ($pid === 0) {
            for ($i = $w; $i < count($jobs); $i += $workers) {
                $req = pcntl_fork();
                if ($req === 0) {
                    $serve($jobs[$i]);
                    exit(0);
                }
                pcntl_waitpid($req, $status);
                if (pcntl_wifsignaled($status)) $crashed($jobs[$i], pcntl_wtermsig($status));
            }
            exit(0);
        }
        $children[] = $pid;
    }
    $failed = 0;
    foreach ($children as $pid) {
        pcntl_waitpid($pid, $status);
        if (!pcntl_wifexited($status) || pcntl_wexitstatus($status) !== 0) $failed++;
    }
    return $failed ? 1 : 0;
}
