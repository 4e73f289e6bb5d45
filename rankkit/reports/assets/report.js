(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("rankkit-data").textContent);
  // Control, bidirectional and invisible format characters are shown as escapes (rankkit.data.formatting.inert):
  // a U+202E in an id cannot reorder a cell, a U+200B cannot make two names look alike.
  var INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]/g;
  function inert(text) {
    return text.replace(INVISIBLE, function (c) {
      var code = c.charCodeAt(0), hex = code.toString(16);
      return code < 0x100 ? "\\x" + ("0" + hex).slice(-2) : "\\u" + ("000" + hex).slice(-4);
    });
  }
  // Every piece of data reaches the page as a text node (never as markup).
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === "className") node.className = attrs[key];
      else if (key === "onclick") node.addEventListener("click", attrs[key]);
      else node.setAttribute(key, attrs[key]);
    });
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(inert(String(child))) : child);
    });
    return node;
  }
  function num(value) { return value === null || value === undefined ? "–" : (Math.round(value * 1000) / 1000).toString(); }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  var tasksById = {};
  DATA.tasks.forEach(function (t) { tasksById[t.task_id] = t; });
  var taskSelect = document.getElementById("task-select");
  var strategySelect = document.getElementById("strategy-select");
  DATA.tasks.forEach(function (t, i) {
    var label = t.task_id + " — " + t.prompt.replace(/\s+/g, " ").slice(0, 70);
    taskSelect.appendChild(el("option", {value: String(i)}, [label]));
  });
  DATA.strategies.forEach(function (s, i) { strategySelect.appendChild(el("option", {value: String(i)}, [s.name])); });
  // Open on the first knockout-like strategy, whose bracket is the most telling first view.
  for (var k = 0; k < DATA.strategies.length; k++) if (DATA.strategies[k].knockout_like) { strategySelect.value = String(k); break; }

  function candidateOf(task, id) {
    for (var i = 0; i < task.candidates.length; i++) if (task.candidates[i].id === id) return task.candidates[i];
    return {id: id, system: null, text: "", human: null};
  }
  function who(task, id) {
    var c = candidateOf(task, id);
    return c.system ? id + " (" + c.system + ")" : id;
  }

  function renderTask() {
    var task = DATA.tasks[Number(taskSelect.value)];
    var strategy = DATA.strategies[Number(strategySelect.value)];
    var result = strategy.tasks[task.task_id];
    var view = document.getElementById("task-view");
    clear(view);
    view.appendChild(el("h3", {}, ["Prompt"]));
    view.appendChild(el("div", {className: "text prompt"}, [task.prompt]));
    if (task.reference) {
      view.appendChild(el("h3", {}, ["Reference"]));
      view.appendChild(el("div", {className: "text prompt"}, [task.reference]));
    }
    var metaKeys = Object.keys(task.meta || {});
    if (metaKeys.length) {
      view.appendChild(el("p", {className: "note"}, [metaKeys.map(function (k) { return k + ": " + task.meta[k]; }).join(" · ")]));
    }
    if (!result) { view.appendChild(el("p", {className: "note"}, ["This strategy has no result for this task."])); renderMatches(task, null); return; }
    var header = ["rank", "candidate", "system", "score", "human (" + (DATA.criterion || "none") + ")"];
    if (strategy.knockout_like) header = header.concat(["eliminated", "graded"]);
    var undecided = result.ranking.some(function (id) { return (result.extras[id] || {}).undecided; });
    if (undecided) header.push("undecided");
    header.push("text");
    var body = el("tbody", {}, result.ranking.map(function (id, i) {
      var c = candidateOf(task, id), extra = result.extras[id] || {};
      var cells = [el("td", {className: "num"}, [String(i + 1)]), el("td", {}, [id]), el("td", {}, [c.system || ""]),
                   el("td", {className: "num"}, [num(result.scores[id])]), el("td", {className: "num"}, [num(c.human)])];
      if (strategy.knockout_like) {
        cells.push(el("td", {className: "num"}, [extra.eliminated_round === null || extra.eliminated_round === undefined ? "champion" : "round " + extra.eliminated_round]));
        cells.push(el("td", {className: "num"}, [String(extra.played === undefined ? "" : extra.played) + "×"]));
      }
      if (undecided) cells.push(el("td", {className: "num"}, [String(extra.undecided || 0)]));
      var preview = c.text.length > 140 ? c.text.slice(0, 140) + "…" : c.text;
      cells.push(el("td", {}, [el("details", {}, [el("summary", {}, [preview]), el("div", {className: "text"}, [c.text])])]));
      return el("tr", {}, cells);
    }));
    view.appendChild(el("h3", {}, ["Candidates ranked by " + strategy.name]));
    view.appendChild(el("table", {}, [el("thead", {}, [el("tr", {}, header.map(function (h) { return el("th", {}, [h]); }))]), body]));
    if (result.bracket) view.appendChild(renderBracket(task, result));
    renderMatches(task, result);
  }

  function renderBracket(task, result) {
    var wrap = el("div", {}, [el("h3", {}, ["Knockout bracket (click a match to open it)"])]);
    var bracket = el("div", {className: "bracket"});
    result.bracket.rounds.forEach(function (round) {
      var column = el("div", {className: "round"}, [el("h4", {}, ["Round " + round.round])]);
      round.pairings.forEach(function (p) {
        var box = el("div", {className: "pairing", title: "open this match", onclick: function () { showMatch(task, result, p.matches[0]); }}, [
          el("div", {className: "side" + (p.winner === p.a ? " won" : "")}, [el("span", {}, [who(task, p.a)]), el("span", {}, [num(p.grade_a)])]),
          el("div", {className: "side" + (p.winner === p.b ? " won" : "")}, [el("span", {}, [who(task, p.b)]), el("span", {}, [num(p.grade_b)])])
        ]);
        column.appendChild(box);
      });
      round.byes.forEach(function (id) { column.appendChild(el("div", {className: "bye"}, [who(task, id) + " — bye"])); });
      bracket.appendChild(column);
    });
    if (result.bracket.champion) {
      bracket.appendChild(el("div", {className: "round"}, [el("h4", {}, ["Champion"]), el("div", {className: "champion"}, [who(task, result.bracket.champion)])]));
    }
    wrap.appendChild(bracket);
    return wrap;
  }

  function renderMatches(task, result) {
    var list = document.getElementById("match-list");
    var detail = document.getElementById("match-detail");
    clear(list); clear(detail);
    if (!result || !result.matches.length) { list.appendChild(el("p", {className: "note"}, ["No pairwise matches: this strategy grades each answer on its own."])); return; }
    result.matches.forEach(function (ref, i) {
      var m = matchOf(task, result, i);
      var label = (m.round ? "R" + m.round + " " : "") + (m.shown ? m.shown.join(", ") : m.first + " vs " + m.second);
      list.appendChild(el("button", {type: "button", "data-index": String(i), onclick: function () { showMatch(task, result, i); }}, [label]));
    });
    showMatch(task, result, 0);
  }

  // A strategy's match is [index into the task's shared judgments, round].
  function matchOf(task, result, index) {
    var ref = result.matches[index], judgment = DATA.judgments[task.task_id][ref[0]], m = {round: ref[1]};
    Object.keys(judgment).forEach(function (k) { m[k] = judgment[k]; });
    return m;
  }

  function showMatch(task, result, index) {
    var m = matchOf(task, result, index);
    var detail = document.getElementById("match-detail");
    clear(detail);
    Array.prototype.forEach.call(document.querySelectorAll("#match-list button"), function (b) {
      b.className = Number(b.getAttribute("data-index")) === index ? "active" : "";
    });
    function slot(id, score, label, won) {
      var c = candidateOf(task, id);
      return el("div", {className: "slot" + (won ? " won" : "")}, [
        el("h4", {}, [label + ": " + who(task, id)]),
        el("p", {className: "note"}, ["parsed score " + num(score) + " · human " + num(c.human)]),
        el("div", {className: "text"}, [c.text])]);
    }
    detail.appendChild(el("h3", {}, ["Match " + (index + 1) + " of " + result.matches.length + (m.round ? " · round " + m.round : "")]));
    detail.appendChild(el("details", {open: "open"}, [el("summary", {}, ["prompt"]), el("div", {className: "text prompt"}, [task.prompt])]));
    if (m.shown) { showGroup(task, m, detail); return; }
    detail.appendChild(el("div", {className: "duo"}, [
      slot(m.first, m.first_grade, "shown first", m.winner === "first"),
      slot(m.second, m.second_grade, "shown second", m.winner === "second")]));
    var facts = "verdict: " + m.winner + " · parse: " + m.status + (m.probability === null || m.probability === undefined ? "" : " · P(first wins) " + num(m.probability));
    detail.appendChild(el("p", {}, [facts]));
    detail.appendChild(el("h4", {}, ["judge output (raw)"]));
    detail.appendChild(el("pre", {className: "raw"}, [m.raw || "(empty)"]));
  }

  // A k-way judgment: one card with the k answers in the order shown, the judge's pick marked.
  function showGroup(task, m, detail) {
    var labels = "ABCDEFGH";
    detail.appendChild(el("div", {className: "duo"}, m.shown.map(function (id, slot) {
      var c = candidateOf(task, id);
      var score = m.scores ? m.score_kind + " " + num(m.scores[slot]) + " · " : "";
      return el("div", {className: "slot" + (id === m.best ? " won" : "")}, [
        el("h4", {}, ["shown " + labels.charAt(slot) + ": " + who(task, id)]),
        el("p", {className: "note"}, [score + "human " + num(c.human)]),
        el("div", {className: "text"}, [c.text])]);
    })));
    var verdict = m.ranking ? "ranking: " + m.ranking.join(" > ") : "best: " + (m.best === null ? "none" : m.best);
    detail.appendChild(el("p", {}, [m.kind + " of " + m.shown.length + " · " + verdict + " · parse: " + m.status]));
    detail.appendChild(el("h4", {}, ["judge output (raw)"]));
    detail.appendChild(el("pre", {className: "raw"}, [m.raw || "(empty)"]));
  }

  taskSelect.addEventListener("change", renderTask);
  strategySelect.addEventListener("change", renderTask);
  if (DATA.tasks.length && DATA.strategies.length) renderTask();
  document.body.setAttribute("data-ready", "1");
})();
