package config

import (
	"github.com/spf13/viper"
)

// Worker configures foreman worker: a process that takes check jobs from
// the hosts of the cluster (cluster.nats) and runs them here, in the
// sandbox host.sandbox* describe.
type Worker struct {
	Labels   []string // what this machine offers (gpu, linux), sorted; a check that asks for one goes to a worker that has it
	Work     string   // the worker's private directory: its mirrors of the hosts' repositories, the worktrees and logs of its checks
	Parallel int      // jobs run at once
}

func workerDefaults(d map[string]any) {
	d["worker.labels"] = []string{}
	d["worker.work"] = ".foreman/worker"
	d["worker.parallel"] = 1
}

func decodeWorker(v *viper.Viper, c *Config, src sources) error {
	w := Worker{Work: src.path("worker.work", v.GetString("worker.work"))}
	raw := v.Get("worker.labels")
	if _, ok := raw.([]any); !ok {
		raw = v.GetStringSlice("worker.labels")
	}
	labels, err := labelList(raw)
	if err != nil {
		return errorf("worker.labels", "%v", err)
	}
	w.Labels = labels
	if w.Parallel, err = count(v, "worker.parallel", 1); err != nil {
		return err
	}
	if err := atMost(w.Parallel, MaxParallel, "worker.parallel"); err != nil {
		return err
	}
	c.Worker = w
	return nil
}

// RequireWorker refuses a configuration foreman worker cannot work with:
// it takes its jobs through NATS.
func (c *Config) RequireWorker() error {
	if !c.Cluster.Enabled() {
		return errorf("cluster.nats", "not set: a worker takes its jobs from the hosts through NATS JetStream (set it to the cluster's URL, as the hosts' is)")
	}
	return nil
}
