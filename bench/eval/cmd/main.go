// Command cmd runs shepherd's behavioural eval (package bench/eval) and
// prints its table; see bench/eval/README.md.
//
//	go run ./bench/eval/cmd [-api anthropic|openai_chat|openai_responses|gemini]
//	    [-model M] [-base-url URL] [-tasks fix-add,add-title] [-scripts compliant,careless]
//	    [-mock] [-steps N] [-json report.json] [-v]
//
// With ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY set (for -api,
// or the first found) it runs against that provider; without, against the
// scripted mock provider, and says so.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/bench/eval"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	api := flag.String("api", "", "wire API: anthropic, openai_chat, openai_responses, gemini (live: default the first with a key; mock: default all)")
	model := flag.String("model", "", "model of a live run (default per API)")
	baseURL := flag.String("base-url", "", "provider base URL of a live run (default $<PROVIDER>_BASE_URL or the provider's)")
	tasks := flag.String("tasks", "", "comma-separated task names (default all: "+strings.Join(taskNames(), ",")+")")
	scripts := flag.String("scripts", "", "mock scripts: compliant, careless (default both)")
	forceMock := flag.Bool("mock", false, "run against the mock even when a key is set")
	steps := flag.Int("steps", eval.DefaultStepCap, "most agent requests per user turn")
	jsonPath := flag.String("json", "", "write the JSON report to this file")
	verbose := flag.Bool("v", false, "log shepherd's warnings to stderr")
	flag.Parse()

	getenv := os.Getenv
	if *forceMock {
		getenv = func(string) string { return "" }
	}
	p, err := eval.Detect(getenv, *api, *model, *baseURL)
	if err != nil {
		return err
	}
	o := eval.Options{Provider: p, StepCap: *steps, Progress: os.Stderr, Scripts: split(*scripts)}
	if *api != "" {
		o.APIs = []string{*api}
	}
	for _, name := range split(*tasks) {
		t, ok := eval.TaskNamed(name)
		if !ok {
			return fmt.Errorf("eval: unknown task %q (%s)", name, strings.Join(taskNames(), ", "))
		}
		o.Tasks = append(o.Tasks, t)
	}
	if *verbose {
		if o.Log, err = zap.NewDevelopment(zap.IncreaseLevel(zap.WarnLevel)); err != nil {
			return err
		}
	}
	fmt.Fprintln(os.Stderr, "eval: provider:", p.Describe())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := eval.Run(ctx, o)
	if err != nil {
		return err
	}
	fmt.Print(rep.Markdown())
	if *jsonPath != "" {
		return rep.WriteJSON(*jsonPath)
	}
	return nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func taskNames() []string {
	var out []string
	for _, t := range eval.Tasks() {
		out = append(out, t.Name)
	}
	return out
}
